#!/usr/bin/env python3
"""Trains the META-02 text classifier (src/rules/classifier.rs) and writes its weights.

    python3 scripts/train-classifier.py            # writes src/rules/classifier.tsv
    python3 scripts/train-classifier.py --check    # exits 1 when the committed file differs

The model: logistic regression over the words and word pairs of every key and string value of
a tool (lower-cased runs of letters and digits; pairs only inside one string) and their word
classes (src/rules/classifier-classes.txt; a class met inside the tool's schema parts also as
its `s@` twin), trained with AdaGrad on labelled tools (the mean of SEEDS trainings in different
orders):
  - fixtures/corpus/ (published poisoned and real benign tools, with their origins);
  - ../shared/corpus/wild-dev/ when it is beside the repository (the committed weights were
    trained with it; a clone without it trains a slightly different model);
  - fixtures/rules/P1-P6 (our own fixtures: a fire's flagged tools poisoned, the tools of a
    fixture that expects no P1-P5 benign);
  - fixtures/redteam/set*-dev.json (the development halves of our own red-team sets 1-28; their
    held-out halves are kept outside the repository and never trained on).
Thresholds come from five-fold cross-validation grouped by source file (the held-out scores of
three draws of the folds, pooled): `add` is the score that
0.3 % of benign tools exceed (the issue's budget is 1 % of real servers' tools flagged; at 0.1 %
the line was spent on a tail of nine benign tools, and unseen attacks just under it went
unflagged), `settle` the score below which 5 % of poisoned tools fall, `weak`
the score below which 20 % do (under it, a tool whose only findings are the weakest phrase kinds,
src/rules/classifier.rs WEAK, is settled too).
Pure Python, no dependencies, deterministic (fixed seeds, sorted features).
"""
import bisect, json, math, os, random, re, sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
OUT = os.path.join(ROOT, "src", "rules", "classifier.tsv")
CLASSES = os.path.join(ROOT, "src", "rules", "classifier-classes.txt")
WORDCHARS = os.path.join(ROOT, "src", "rules", "classifier-wordchars.txt")
PARITY = os.path.join(ROOT, "fixtures", "classifier", "parity.json")
FOLDS = os.path.join(ROOT, "src", "rules", "classifier-folds.txt")
MAX_DEPTH = 32
MAX_TOKENS = 20000
EPOCHS, LAM, RATE, POS_WEIGHT, MIN_DF, MIN_WEIGHT = 15, 1e-3, 0.3, 5.0, 2, 0.01
ADD_FPR, SETTLE_Q, WEAK_Q = 0.003, 0.05, 0.2
CV_REPEATS = 3
SEEDS = 5


def _word_ranges():
    """The scorer's word characters beyond ASCII (char::is_alphanumeric but the blank Hangul
    fillers, the combining marks and the invisible characters it drops), as
    src/rules/classifier.rs tests write them."""
    starts, ends = [], []
    with open(WORDCHARS, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                a, b = line.split()
                starts.append(int(a, 16)); ends.append(int(b, 16))
    return starts, ends


_WORD_STARTS, _WORD_ENDS = _word_ranges()


def is_word_char(c):
    # Exactly the scorer's is_word_char (Python has no Other_Alphabetic: Devanagari
    # vowel signs and Arabic harakat would split words here and not there).
    if c.isascii():
        return c.isalnum()
    i = bisect.bisect_right(_WORD_STARTS, ord(c)) - 1
    return i >= 0 and ord(c) <= _WORD_ENDS[i]


def _folds():
    """The letters in disguise the scorer reads as ASCII (src/rules/classifier.rs `unmask`):
    compatibility forms always, Cyrillic and Greek lookalikes in a word with ASCII letters."""
    always, mixed = {}, {}
    with open(FOLDS, encoding="utf-8") as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                code, letter, kind = line.split()
                c = chr(int(code, 16))
                if kind == "drop":
                    always[c] = ""
                else:
                    (always if kind == "always" else mixed)[c] = letter
    return always, mixed


_ALWAYS, _MIXED = _folds()


def unmask(w):
    """A word that is not ASCII with its letters in disguise read as ASCII and its invisible
    characters dropped, before it is lower-cased (the scorer's `unmask`)."""
    if w.isascii():
        return w
    mixed = any(c.isascii() and c.isalpha() for c in w)
    out = []
    for c in w:
        if c in _ALWAYS:
            out.append(_ALWAYS[c])  # "" for an invisible character: dropped
        elif mixed and c in _MIXED:
            out.append(_MIXED[c])
        else:
            out.append(c)
    return "".join(out)


# Keys of the MCP tool shape and of JSON Schema: structure, not text (a tool list that carries
# schemas would otherwise read unlike one that does not, whatever its words).
STRUCTURAL = {
    "name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta",
    "type", "properties", "required", "items", "enum", "const", "default", "examples", "format",
    "pattern", "additionalProperties", "patternProperties", "$schema", "$id", "$ref", "$defs",
    "definitions", "anyOf", "oneOf", "allOf", "not", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "minItems", "maxItems",
    "uniqueItems", "minProperties", "maxProperties", "nullable", "readOnly", "writeOnly",
    "deprecated", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint", "icons",
}
# The JSON Schema type names, as the value of `type`.
TYPES = {"object", "string", "integer", "number", "boolean", "array", "null"}


# Keys whose values name a schema document or its dialect (`"$schema": "https://json-schema.org/…"`):
# boilerplate every SDK writes, not text.
DIALECT = {"$schema", "$id"}


def is_type_name(v):
    """A `type` value that only names JSON Schema types."""
    if isinstance(v, list):
        return all(isinstance(t, str) and t in TYPES for t in v)
    return isinstance(v, str) and v in TYPES


# The tool's keys whose values are schema and annotations: a word class read there also counts
# as its schema twin (`s@secret`), since an instruction in a parameter's text is full-schema
# poisoning, rarer in benign tools than the same words in a description.
SCHEMA_PARTS = {"inputSchema", "outputSchema", "_meta", "annotations"}


def strings(v, out, depth=0, schema=False):
    """(text, whether it is inside the tool's schema parts) for every key and string value."""
    if depth > MAX_DEPTH:
        return
    if isinstance(v, str):
        out.append((v, schema))
    elif isinstance(v, dict):
        # Keys in byte order, as the scanner's JSON tree holds them (it matters only past
        # MAX_TOKENS words).
        for k, x in sorted(v.items()):
            inner = schema or (depth == 0 and k in SCHEMA_PARTS)
            if k not in STRUCTURAL:
                out.append((str(k), inner))
            if k == "type" and is_type_name(x) or k in DIALECT:
                continue
            strings(x, out, depth + 1, inner)
    elif isinstance(v, list):
        for x in v:
            strings(x, out, depth + 1, schema)


def load_classes():
    """Word -> its classes (src/rules/classifier-classes.txt), in file order; and the entries
    written in part: (core, whether it must begin the word) -> classes."""
    out, partial = {}, {}
    for line in open(CLASSES, encoding="utf-8"):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        for w in parts[1:]:
            if w.endswith("*"):
                core = w[1:-1] if w.startswith("*") else w[:-1]
                if (not core or "*" in core or core.isascii() or core.lower() != core
                        or not all(is_word_char(c) for c in core)):
                    # The scorer refuses these too (classifier.rs, Model::parse).
                    sys.exit(f"classifier-classes.txt: {w}: an entry written in part needs a "
                             "lower-case run of word characters with one outside ASCII")
                key = (core, not w.startswith("*"))
                cs = partial.setdefault(key, [])
            else:
                cs = out.setdefault(w, [])
            if parts[0] not in cs:
                cs.append(parts[0])
    return out, sorted(partial.items())


WORD_CLASSES, PARTIAL_CLASSES = load_classes()


def classes_of(w):
    """A word's classes: its own line's, and on a word with a character outside ASCII those of
    every entry written in part that it begins with (`word*`) or holds (`*word*`)."""
    cs = list(WORD_CLASSES.get(w, []))
    if not w.isascii():
        for (core, at_start), more in PARTIAL_CLASSES:
            if (w.startswith(core) if at_start else core in w):
                cs += [c for c in more if c not in cs]
    return cs


def features(tool):
    """The set of words and in-string word pairs of a tool, as the Rust scorer reads them."""
    out, seen = [], 0
    texts = []
    strings(tool, texts)
    f = set()
    for t, schema in texts:
        words, cur = [], []
        for c in t:
            if is_word_char(c):
                cur.append(c)
            elif cur:
                words.append(unmask("".join(cur)).lower()); cur = []
        if cur:
            words.append(unmask("".join(cur)).lower())
        # A word of invisible characters only (a variation selector after an emoji) is none.
        words = [w for w in words if w]
        words = words[: max(0, MAX_TOKENS - seen)]
        seen += len(words)
        f.update(words)
        f.update(a + " " + b for a, b in zip(words, words[1:]))
        prev = []
        for w in words:
            cs = classes_of(w)
            f.update("@" + c for c in cs)
            if schema:
                f.update("s@" + c for c in cs)
            f.update(f"@{p} @{c}" for p in prev for c in cs)
            prev = cs
        if seen >= MAX_TOKENS:
            break
    return sorted(f)


def corpus(root):
    if not os.path.isdir(root):
        return []
    m = json.load(open(os.path.join(root, "manifest.json")))
    entries = m if isinstance(m, list) else m.get("files", m.get("entries", []))
    out = []
    for e in entries:
        path = os.path.join(root, e["file"])
        doc = json.load(open(path))
        tools = doc.get("tools") if isinstance(doc, dict) else None
        if tools is None and isinstance(doc, dict):
            tools = (doc.get("result") or {}).get("tools")
        pois = set(e.get("poisoned_tools") or [])
        for t in tools or []:
            if not isinstance(t, dict):
                continue
            if e["label"] == "benign":
                out.append((f"{root}/{e['file']}", 0, t))
            elif t.get("name") in pois:
                out.append((f"{root}/{e['file']}", 1, t))
    return out


def fixtures(root):
    """Our own rule fixtures (fixtures/rules/P1-P6): a tool a fixture expects a P1-P5 finding on
    (by pointer, or by name when one tool has it) is poisoned; every tool of a fixture that
    expects none is benign. The classifier's own fixtures (`fire-classifier-*`, `fire-ordinary-*`, `fire-passage-*` and their near misses) are left out, and so is any fixture marked `"train": false`."""
    out = []
    for d in sorted(os.listdir(root)):
        if not re.fullmatch(r"P[1-6]", d):
            continue
        for f in sorted(os.listdir(os.path.join(root, d))):
            # The classifier's own fixtures test it on texts it never saw.
            if f.startswith(("fire-classifier", "quiet-classifier", "fire-ordinary", "quiet-ordinary",
                             "fire-passage", "quiet-passage")):
                continue
            path = os.path.join(root, d, f)
            fx = json.load(open(path))
            # A fixture that tests another rule on a text the classifier must not have seen
            # (the sentence reading's later kinds) says `"train": false`.
            if fx.get("kind", "tools") != "tools" or fx.get("train") is False:
                continue
            doc = fx.get("document")
            tools = doc if isinstance(doc, list) else (doc or {}).get("tools")
            if tools is None and isinstance(doc, dict):
                tools = (doc.get("result") or {}).get("tools")
            if not isinstance(tools, list):
                continue
            hit, unplaced = set(), False
            for e in fx.get("expect", []):
                rule = e if isinstance(e, str) else e.get("rule", "")
                if not re.fullmatch(r"META-02/P[1-5]", rule):
                    continue
                m = re.match(r"/tools/(\d+)", "" if isinstance(e, str) else e.get("pointer") or "")
                named = [] if isinstance(e, str) else [
                    i for i, t in enumerate(tools)
                    if isinstance(t, dict) and e.get("tool") is not None and t.get("name") == e.get("tool")
                ]
                if m:
                    hit.add(int(m.group(1)))
                elif len(named) == 1:
                    hit.add(named[0])
                elif len(tools) == 1:
                    hit.add(0)
                else:
                    unplaced = True
            if unplaced:
                continue
            for i, t in enumerate(tools):
                if isinstance(t, dict) and (not hit or i in hit):
                    out.append((path, int(bool(hit)), t))
    return out


def redteam(path):
    return [(f"{path}#{x['id']}", int(x["label"] == "poisoned"), x["tool"]) for x in json.load(open(path))]


def train(X, y, seed=1):
    df = {}
    for x in X:
        for f in x:
            df[f] = df.get(f, 0) + 1
    w, g2, b, gb = {}, {}, 0.0, 1e-8
    idx = list(range(len(X)))
    rnd = random.Random(seed)
    for _ in range(EPOCHS):
        rnd.shuffle(idx)
        for i in idx:
            fs = [f for f in X[i] if df[f] >= MIN_DF]
            z = b + sum(w.get(f, 0.0) for f in fs)
            p = 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))
            g = (p - y[i]) * (POS_WEIGHT if y[i] else 1.0)
            for f in fs:
                wf = w.get(f, 0.0)
                gf = g + LAM * wf
                s = g2.get(f, 1e-8) + gf * gf
                g2[f] = s
                w[f] = wf - RATE * gf / math.sqrt(s)
            gb += g * g
            b -= RATE * g / math.sqrt(gb)
    return w, b


def train_averaged(X, y):
    """The mean of SEEDS models trained on the same tools in different orders: one training's
    weights moved with the order of its updates (two trainings three benign tools apart put a
    fifth of the held-out attacks on different sides of `add`); the mean halves that and, on four
    red-team sets none of them had seen, found more attacks at the same false alarms."""
    models = [train(X, y, seed=s) for s in range(1, SEEDS + 1)]
    w = {}
    for m, _ in models:
        for f, v in m.items():
            w[f] = w.get(f, 0.0) + v / SEEDS
    return w, sum(b for _, b in models) / SEEDS


def score(model, x):
    w, b = model
    return b + sum(w.get(f, 0.0) for f in x)


def main():
    data = corpus(os.path.join(ROOT, "fixtures", "corpus"))
    data += corpus(os.path.normpath(os.path.join(ROOT, "..", "shared", "corpus", "wild-dev")))
    rt = os.path.join(ROOT, "fixtures", "redteam")
    for f in sorted(os.listdir(rt)):
        if re.fullmatch(r"set\d+-dev\.json", f):
            data += redteam(os.path.join(rt, f))
    data += fixtures(os.path.join(ROOT, "fixtures", "rules"))
    X = [features(t) for _, _, t in data]
    y = [l for _, l, _ in data]
    # Folds by source file (a red-team tool is its own source): a server's tools stay together.
    group = lambda i: data[i][0]
    # The held-out scores of CV_REPEATS different fold draws, pooled: the lines are far quantiles
    # (for `add`, the 83rd highest of about 27,600 pooled benign scores), and one draw of folds
    # moved them by a whole point between two trainings that differed by a dozen tools. Pooled,
    # not averaged per tool: an average narrows both tails, and the shipped model scores like one
    # draw.
    draws = []
    for r in range(CV_REPEATS):
        groups = sorted({group(i) for i in range(len(data))})
        random.Random(7 + r).shuffle(groups)
        fold = {g: k % 5 for k, g in enumerate(groups)}
        cv = [0.0] * len(data)
        for k in range(5):
            tr = [i for i in range(len(data)) if fold[group(i)] != k]
            m = train_averaged([X[i] for i in tr], [y[i] for i in tr])
            for i in range(len(data)):
                if fold[group(i)] == k:
                    cv[i] = score(m, X[i])
        draws.append(cv)
    ben = sorted((cv[i] for cv in draws for i in range(len(data)) if not y[i]), reverse=True)
    pos = sorted(cv[i] for cv in draws for i in range(len(data)) if y[i])
    add, settle = ben[int(len(ben) * ADD_FPR)], pos[int(len(pos) * SETTLE_Q)]
    weak = pos[int(len(pos) * WEAK_Q)]

    def above(label):
        return sum(cv[i] > add for cv in draws for i in range(len(data)) if bool(y[i]) == label)

    w, b = train_averaged(X, y)
    kept = sorted((f, round(v, 4)) for f, v in w.items() if abs(v) >= MIN_WEIGHT)
    lines = [
        "# The META-02 text classifier's weights, written by scripts/train-classifier.py; do not edit.",
        f"# Trained on {sum(y)} poisoned and {len(y) - sum(y)} benign tools; cross-validated: "
        f"{above(True) / CV_REPEATS:.1f} poisoned above `add`, "
        f"{above(False) / CV_REPEATS:.1f} benign above it (means over {CV_REPEATS} draws of the folds).",
        f"bias\t{round(b, 4)}",
        f"add\t{round(add, 4)}",
        f"settle\t{round(settle, 4)}",
        f"weak\t{round(weak, 4)}",
    ] + [f"w\t{f}\t{v}" for f, v in kept]
    text = "\n".join(lines) + "\n"
    # Scores the Rust scorer must reproduce: our own red-team tools, with the rounded weights.
    rounded = (dict(kept), round(b, 4))
    own = [t for t in data if "#" in t[0]][::25]
    parity = [{"tool": t, "score": round(score(rounded, features(t)), 4)} for _, _, t in own]
    ptext = json.dumps(parity, indent=1, ensure_ascii=False) + "\n"
    if "--check" in sys.argv:
        same = open(OUT).read() == text and open(PARITY).read() == ptext
        print("classifier.tsv is up to date" if same else "classifier.tsv differs from a fresh training")
        sys.exit(0 if same else 1)
    os.makedirs(os.path.dirname(PARITY), exist_ok=True)
    open(OUT, "w").write(text)
    open(PARITY, "w").write(ptext)
    print(lines[1][2:])
    print(f"{len(kept)} weights; add {add:.3f}, settle {settle:.3f}, weak {weak:.3f}")


if __name__ == "__main__":
    main()
