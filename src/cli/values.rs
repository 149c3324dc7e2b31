//! The library's enums as clap values. The library names them (strum: `FromStr`, their
//! names, every variant) and knows no clap; the CLI alone turns them into `--flag` values,
//! with the help each value shows in `--help` and the man pages.

use clap::builder::PossibleValue;
use strum::VariantArray as _;

use crate::finding::{Confidence, Severity};
use crate::model::FailOn;
use crate::report::Format;
use crate::rules::InputKind;

/// `impl clap::ValueEnum` for library enums: each variant by its strum name, with its help.
macro_rules! value_enum {
    ($($t:ty { $($variant:ident => $help:expr),* $(,)? })*) => {
        $(
            impl clap::ValueEnum for $t {
                fn value_variants<'a>() -> &'a [Self] {
                    <$t>::VARIANTS
                }
                fn to_possible_value(&self) -> Option<PossibleValue> {
                    let value = PossibleValue::new(<&'static str>::from(*self));
                    #[allow(unreachable_patterns)]
                    let help: Option<&'static str> = match self {
                        $(<$t>::$variant => Some($help),)*
                        _ => None,
                    };
                    Some(match help {
                        Some(h) => value.help(h),
                        None => value,
                    })
                }
            }
        )*
    };
}

value_enum! {
    Severity {}
    Confidence {}
    FailOn {}
    Format {
        Markdown => "A Markdown summary (the Action's job summary)",
    }
    InputKind {
        Tools => "A tools/list response, its result, or a bare tools array",
        ServerCard => "An MCP server card",
        AgentCard => "An A2A agent card",
    }
    crate::docs::ListFormat {}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CLI's value of every variant is the library's name for it, and parses back.
    #[test]
    fn clap_values_are_the_library_names() {
        fn same<T>()
        where
            T: clap::ValueEnum + Copy + PartialEq + std::fmt::Debug + std::str::FromStr,
            &'static str: From<T>,
        {
            for v in T::value_variants() {
                let name = v.to_possible_value().map(|p| p.get_name().to_string());
                assert_eq!(name.as_deref(), Some(<&'static str>::from(*v)));
                assert_eq!(name.and_then(|n| n.parse::<T>().ok()), Some(*v));
            }
        }
        same::<Severity>();
        same::<Confidence>();
        same::<FailOn>();
        same::<Format>();
        same::<InputKind>();
        same::<crate::docs::ListFormat>();
        assert_eq!(<&'static str>::from(InputKind::ServerCard), "server-card");
        assert_eq!("SARIF".parse::<Format>().ok(), Some(Format::Sarif));
    }
}
