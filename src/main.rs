fn main() -> std::process::ExitCode {
    mcpprobe::cli::main()
}
