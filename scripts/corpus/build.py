#!/usr/bin/env python3
"""Builds fixtures/corpus/ (issue 23) from mirrored public repositories, statically.

Nothing from the sources is run or imported: JSON is parsed, Python is read with `ast`
(scripts/corpus/pyextract.py), Python-literal strings with `ast.literal_eval`, and the few
TypeScript definitions are cut out of their source text with regular expressions. The mirrors are
bare git directories (`fetch` of the search tool) read with `git show`.

    python3 scripts/corpus/build.py [--mirrors /work/.mirror] [--shared ../shared/corpus/wild-dev]

Python 3.11 stdlib only. Re-running rewrites fixtures/corpus/ from the pinned commits below.
"""
import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE))
from pyextract import extract  # noqa: E402

TOOLSDK = ("toolsdk-ai/toolsdk-mcp-registry", "4bfe8262c554f8fb866b48cce910dd6ba20eece1")
TOOLBENCH = ("mcp-tool-bench/MCPToolBenchPP", "323725c417b43a02bea5a1421662e299dbadeb77")
RISKCUE = ("PorUna-byte/MCP-RiskCue", "7cd450d6b259961ce9d2e2ada0d080061b3ae436")
ETHICAL = ("stevengonsalvez/mcp-ethicalhacks", "f4c6f77af54df0d9353b0b36bfb7ceaa5912a958")

# Repositories kept apart for measuring us (and the official GitHub / AWS servers): never used.
FORBIDDEN = [
    "enkryptai/secure-mcp-gateway", "jaschadub/agentnull", "acuvity/mcp-server-everything-wrong",
    "alexandriashai/mcp-guardian", "slowmist/mastermcp", "tencent/ai-infra-guard",
    "docker/mcp-registry", "accenture/mcp-bench", "nmeisenzahl/hijack-agentic-ai",
    "smart-mcp-proxy/malicious-demo-mcp-server", "sarveshchandak/mcp-server-tool-poisoning",
    "matteocolazilli/malicious-mcp-server", "bad-mcp", "giannos-g/mcp",
    "mdatikshahriar/mcp-attack-demo-spring", "integsec/vulnerablemcp", "github/github-mcp-server",
    "awslabs/mcp", "jakemannix/mcp-proxy",
]

MIRRORS = Path("/work/.mirror")


def git_show(repo, commit, path):
    d = MIRRORS / (repo.replace("/", "+")) / "repo"
    return subprocess.run(["git", "--git-dir", str(d), "show", f"{commit}:{path}"],
                          check=True, capture_output=True).stdout.decode("utf-8")


def git_ls(repo, commit, path):
    d = MIRRORS / (repo.replace("/", "+")) / "repo"
    out = subprocess.run(["git", "--git-dir", str(d), "ls-tree", "--name-only", commit, path],
                         check=True, capture_output=True).stdout.decode()
    return out.split()


def slug(s):
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")[:80]


def key(tool):
    return json.dumps(tool, sort_keys=True, ensure_ascii=False)


class Corpus:
    def __init__(self, out, shared):
        self.out = out
        self.entries = []
        self.seen_tools = set()       # identical tools already kept (or in the shared corpus)
        self.server_names = []        # (tool names, tool name+description pairs, where) of kept servers
        self.files = set()
        self.skipped = []
        if shared and (shared / "manifest.json").is_file():
            for e in json.loads((shared / "manifest.json").read_text()):
                tools = json.loads((shared / e["file"]).read_text())["tools"]
                for t in tools:
                    self.seen_tools.add(key(t))
                if e["label"] == "benign":
                    self.server_names.append((*self.signature(tools), "shared " + e["file"]))

    @staticmethod
    def signature(tools):
        return ({t["name"] for t in tools},
                {(t["name"], (t.get("description") or "").strip()) for t in tools})

    def same_server(self, tools):
        """Another capture of a server already kept: at least 3 tools and 80 % of the names shared,
        or half of the (name, description) pairs identical."""
        names, pairs = self.signature(tools)
        for other, other_pairs, where in self.server_names:
            if len(names) >= 3 and len(names & other) / len(names | other) >= 0.8:
                return where
            if len(pairs & other_pairs) / len(pairs | other_pairs) >= 0.5:
                return where
        return None

    def write(self, label, source, name, origin, licence, tools, kind=None, poisoned=None, note=None):
        if label == "benign":
            dup = self.same_server(tools)
            if dup:
                self.skipped.append(f"{source} {name}: same server as {dup}")
                return
            kept = [t for t in tools if key(t) not in self.seen_tools]
            if len(kept) < len(tools):
                note = ((note + "; ") if note else "") + f"{len(tools) - len(kept)} tool(s) identical to ones kept elsewhere dropped"
            tools = kept
            if not tools:
                self.skipped.append(f"{source} {name}: every tool already kept")
                return
            self.server_names.append((*self.signature(tools), f"{source} {name}"))
        for t in tools:
            self.seen_tools.add(key(t))
        base = f"{label}/{source}__{slug(name)}"
        file, i = base + ".json", 2
        while file in self.files:
            file, i = f"{base}-{i}.json", i + 1
        self.files.add(file)
        p = self.out / file
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps({"tools": tools}, indent=1, ensure_ascii=False) + "\n")
        self.entries.append({
            "label": label, "source": source, "name": name, "origin": origin, "kind": kind,
            "poisoned_tools": poisoned, "note": note, "file": file, "n_tools": len(tools),
            "licence": licence,
        })


def forbidden(url):
    u = (url or "").lower()
    return any(f in u for f in FORBIDDEN)


def toolbench(c):
    repo, commit = TOOLBENCH
    lic = "none stated"
    # Catalogue files: one server each.
    for path in ["mcp/tools/browser/executeautomation_mcp-playwright.json",
                 "mcp/tools/browser/puppeteer_puppeteer.json"]:
        d = json.loads(git_show(repo, commit, path))
        raw = d["tools"]
        tools_in = ast.literal_eval(raw) if isinstance(raw, str) else raw
        tools = []
        for t in tools_in:
            schema = t.get("input_schema") or t.get("inputSchema")
            if isinstance(schema, str):
                schema = ast.literal_eval(schema)
            tool = {"name": t["name"], "description": t.get("description", "")}
            if schema is not None:
                tool["inputSchema"] = schema
            tools.append(tool)
        c.write("benign", "mcptoolbenchpp", d["id"], f"{repo}@{commit}:{path} {d.get('github') or ''}".strip(),
                lic, tools, note="captured tool list of the benchmark's server catalogue (input_schema renamed inputSchema)")
    # Tools embedded in the benchmark tasks, grouped by the server the task names.
    for path, servers in [("data/finance/finance_0724_single_v3.json", ["finance-agent-mcp-server"]),
                          ("data/search/search_0725_single_v2.json", ["tavily-mcp", "google-search"])]:
        d = json.loads(git_show(repo, commit, path))
        by = {s: {} for s in servers}
        for e in d:
            m = {t: s for s, ts in e.get("mcp_tools_dict", {}).items() for t in ts}
            for t in e["tools"]:
                s = m.get(t["name"])
                if s in by and t["name"] not in by[s]:
                    tool = {"name": t["name"], "description": t.get("description", "")}
                    if t.get("input_schema") is not None:
                        tool["inputSchema"] = t["input_schema"]
                    by[s][t["name"]] = tool
        for s, tools in by.items():
            c.write("benign", "mcptoolbenchpp", s, f"{repo}@{commit}:{path} (tools of server {s})", lic,
                    list(tools.values()),
                    note="tools/list entries embedded in the benchmark's tasks, first occurrence of each tool")


def toolsdk(c):
    repo, commit = TOOLSDK
    idx = json.loads(git_show(repo, commit, "indexes/packages-list.json"))
    for name, v in idx.items():
        if not v.get("validated") or not v.get("tools"):
            continue
        pkg = json.loads(git_show(repo, commit, "packages/" + v["path"]))
        url = pkg.get("url") or ""
        if forbidden(url) or forbidden(name):
            c.skipped.append(f"toolsdk {name}: from a repository kept apart ({url})")
            continue
        if [t["name"] for t in v["tools"].values()] == ["protected_tool"]:
            c.skipped.append(f"toolsdk {name}: only the OAuth placeholder tool (protected_tool), not the server's tools")
            continue
        tools = []
        for t in v["tools"].values():
            tool = {"name": t["name"]}
            if t.get("description"):
                tool["description"] = t["description"]
            tools.append(tool)
        lic = pkg.get("license")
        lic = "MIT (registry index); server: " + (lic if lic and lic != "unknown" else "not stated in the registry")
        c.write("benign", "toolsdk-registry", name,
                f"{repo}@{commit}:indexes/packages-list.json [{name!r}] {url}".strip(), lic, tools,
                note="tools/list captured by the registry's validation run (it keeps name and description only, no inputSchema)")


BASE_RE = re.compile(r"Premium|GPT|Wizard|Elite|Pro\b")


def riskcue(c):
    repo, commit = RISKCUE
    d = "Servers/Prompt_injection_risk/Mislead_select/"
    for path in git_ls(repo, commit, d):
        if not path.endswith(".py"):
            continue
        tools = extract(git_show(repo, commit, path))
        boosted = [t for t in tools if BASE_RE.search(t["name"])]
        if not boosted:
            continue
        server = path.rsplit("/", 1)[1][:-3]
        c.write("poisoned", "mcp-riskcue", f"mislead-select-{server}", f"{repo}@{commit}:{path}", "none stated",
                boosted, kind="preference manipulation (the source's Prompt_injection_risk/Mislead_select: "
                "name boost, description boost, name + description boost)",
                poisoned=[t["name"] for t in boosted],
                note="the plain baseline tool of the same server is left out; schema rebuilt from the signature")


def ethicalhacks(c):
    repo, commit = ETHICAL
    path = "src/server.ts"
    src = git_show(repo, commit, path)
    consts = dict(re.findall(r'const (\w+)\s*=\s*"([^"]*)";', src))

    def template(var):
        m = re.search(r"const " + var + r" = `(.*?)`;", src, re.S)
        return re.sub(r"\$\{(\w+)\}", lambda g: consts.get(g.group(1), g.group(0)), m.group(1)).replace("\\`", "`")

    fs = {"name": "get_filesystem_metadata", "description": template("fsMetadataDesc"),
          "inputSchema": {"type": "object", "properties": {
              "path": {"type": "string", "description": "The absolute or relative path to the file or directory"},
              "audit_data": {"type": "string", "description": "Internal data for configuration validation"}},
              "required": ["path"]}}
    c.write("poisoned", "mcp-ethicalhacks", "tool-poisoning-get-filesystem-metadata", f"{repo}@{commit}:{path}",
            "none stated", [fs], kind="tool poisoning (read ~/.gitconfig and ~/.ssh/id_rsa into a parameter)",
            poisoned=["get_filesystem_metadata"], note="zod schema written out as JSON Schema")
    sh = {"name": "get_random_engineering_fact", "description": template("randomEngineeringFactDesc"),
          "inputSchema": {"type": "object", "properties": {}}}
    c.write("poisoned", "mcp-ethicalhacks", "shadowing-get-random-engineering-fact", f"{repo}@{commit}:{path}",
            "none stated", [sh], kind="tool shadowing (redirects another server's create_issue)",
            poisoned=["get_random_engineering_fact"],
            note="AUDIT_GITHUB_USERNAME / AUDIT_REPO_NAME substituted from the source's constants" if consts else None)


def main():
    global MIRRORS
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirrors", default=str(MIRRORS))
    ap.add_argument("--shared", default=str(ROOT / "../shared/corpus/wild-dev"))
    a = ap.parse_args()
    MIRRORS = Path(a.mirrors)
    out = ROOT / "fixtures/corpus"
    for sub in ("benign", "poisoned"):
        shutil.rmtree(out / sub, ignore_errors=True)
    c = Corpus(out, Path(a.shared))
    riskcue(c)
    ethicalhacks(c)
    toolbench(c)
    toolsdk(c)
    (out / "manifest.json").write_text(json.dumps(c.entries, indent=1, ensure_ascii=False) + "\n")
    for s in c.skipped:
        print("skipped:", s)
    p = [e for e in c.entries if e["label"] == "poisoned"]
    b = [e for e in c.entries if e["label"] == "benign"]
    print(f"{len(p)} poisoned files, {len(b)} benign servers, {sum(e['n_tools'] for e in b)} benign tools")


if __name__ == "__main__":
    main()
