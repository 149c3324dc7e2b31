"""The Python package against the real engine: the CLI's own binary for comparison, the bundled
reference server started from Python, and a host in a network namespace for the gate.

Run by scripts/test.sh (`.ci/run`) after `maturin develop`; MCPPROBE_BIN names the CLI built by
`cargo build` (default: target/debug/mcpprobe). Every subprocess and wait has a timeout.
"""

import asyncio
import fcntl
import json
import os
import pathlib
import subprocess
import sys
import threading
import time

import pytest

import mcpprobe

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("MCPPROBE_BIN", ROOT / "target" / "debug" / "mcpprobe"))
JUDGE_TOOLS = ROOT / "fixtures" / "judge" / "tools.json"


def cli(*args, env=None, timeout=120):
    """The CLI binary; its environment has no MCPPROBE_* of the caller's unless given."""
    assert BIN.exists(), f"{BIN} is not built: run `cargo build` first (or set MCPPROBE_BIN)"
    base = {k: v for k, v in os.environ.items() if not k.startswith("MCPPROBE_")}
    base.update(env or {})
    return subprocess.run([str(BIN), *args], capture_output=True, timeout=timeout, env=base, cwd=ROOT)


def fixtures():
    """Tool lists and cards of the rules' table-driven fixtures, plus the real servers'."""
    files = sorted((ROOT / "fixtures" / "rules").glob("*/*.json"))
    files += sorted((ROOT / "fixtures" / "real").glob("*.json"))
    files.append(JUDGE_TOOLS)
    assert len(files) > 40, files
    return files


# --- check, fingerprint, diff: the same answers as the CLI ----------------------------------


def document(path):
    """(text, kind) of a fixture: a rules fixture wraps its document (SPEC §3's table-driven
    test); the real servers' captures are tool lists as they are."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if isinstance(data, dict) and "kind" in data and ("document" in data or "raw" in data):
        return data.get("raw") or json.dumps(data["document"]), data["kind"]
    return path.read_text(encoding="utf-8"), None


@pytest.mark.parametrize("path", fixtures(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_check_gives_the_cli_findings(path, tmp_path):
    text, kind = document(path)
    doc = tmp_path / "doc.json"
    doc.write_text(text, encoding="utf-8")
    kind_args = ["--kind", kind] if kind else []
    out = cli("check", str(doc), *kind_args, "--no-config", "--format", "json", "--fail-on", "none")
    assert out.returncode in (0, 3), out.stderr
    expected = json.loads(out.stdout)
    # The same document as a file and as text; an incomplete run (the CLI's exit 3) is a report too.
    report = mcpprobe.check(doc, kind=kind, fail_on="none")
    assert mcpprobe.check_text(text, kind=kind, fail_on="none", target=str(doc)) == report
    assert (report.outcome == mcpprobe.Outcome.INCOMPLETE) == (out.returncode == 3)
    got = report.to_dict()
    assert got["findings"] == expected["findings"]
    assert [(c["id"], c["status"], c["reason"]) for c in got["checks"]] == [
        (c["id"], c["status"], c["reason"]) for c in expected["checks"]
    ]
    assert got["tool_list_sha256"] == expected["tool_list_sha256"]
    assert report.target == expected["target"]
    assert got["findings"] or path.parent.name != "judge"


def test_check_takes_a_path_or_parsed_json_and_check_text_takes_text():
    text = JUDGE_TOOLS.read_text(encoding="utf-8")
    reports = [
        mcpprobe.check_text(text),
        mcpprobe.check_text(text.encode()),
        mcpprobe.check(json.loads(text)),
        mcpprobe.check(json.loads(text)["tools"]),
        mcpprobe.check(JUDGE_TOOLS),
        mcpprobe.check(str(JUDGE_TOOLS)),
    ]
    fingerprints = {tuple(f.fingerprint for f in r.findings) for r in reports}
    assert len(fingerprints) == 1
    first = reports[0].findings[0]
    assert isinstance(first, mcpprobe.Finding)
    assert first.check == "META-02" and first.location.tool == "export_notes"
    assert reports[0].target == reports[2].target == "<tools>"
    assert reports[-2].target == reports[-1].target == str(JUDGE_TOOLS)
    assert mcpprobe.check(JUDGE_TOOLS, target="notes").target == "notes"


def test_the_report_speaks_in_enums_equal_to_the_json_names():
    report = mcpprobe.check(JUDGE_TOOLS)
    first = report.findings[0]
    assert first.severity is mcpprobe.Severity.HIGH and first.severity == "high"
    assert isinstance(first.confidence, mcpprobe.Confidence)
    assert report.outcome is mcpprobe.Outcome.COMPLETE and f"{report.outcome}" == "complete"
    assert report.check("META-01").status is mcpprobe.Status.SKIPPED
    # Ordered by rank, never alphabetically ("high" < "low" as strings).
    S = mcpprobe.Severity
    assert S.INFO < S.LOW < S.MEDIUM < S.HIGH < S.CRITICAL
    assert S.HIGH > "low" and S.HIGH >= "high" and not S.HIGH < "low"
    assert sorted([S.LOW, S.CRITICAL, S.INFO]) == [S.INFO, S.LOW, S.CRITICAL]
    assert mcpprobe.Confidence.HIGH > mcpprobe.Confidence.MEDIUM
    assert [f for f in report.findings if f.severity >= S.HIGH] == [first]
    # Hashed, printed and serialised as the names.
    assert S.HIGH in {"high"} and "high" in {S.HIGH}
    assert str(S.HIGH) == "high" and json.dumps([S.HIGH]) == '["high"]'
    assert [s.value for s in S] == ["info", "low", "medium", "high", "critical"]


def test_the_report_mirrors_the_json_and_judges_exit_codes_like_the_cli():
    report = mcpprobe.check(JUDGE_TOOLS)
    assert json.loads(report.to_json()) == report.to_dict()
    assert report.outcome == "complete"
    worst = report.findings[0].severity
    assert worst == "high"
    assert report.exit_code() == 1
    assert report.exit_code(fail_on="critical") == 0
    assert report.exit_code(fail_on="none") == 0
    assert report.exit_code(fail_on=mcpprobe.Severity.CRITICAL) == 0
    assert report.exit_code(min_confidence="high") == 1
    assert mcpprobe.check(JUDGE_TOOLS, fail_on="none").exit_code() == 0
    assert report.raise_for_outcome() is report, "a complete run raises nothing, findings or not"
    assert report.check("META-01").status == "skipped"
    assert report.check("META-01").reason.startswith("no judge configured")
    again = mcpprobe.Report.from_json(report.to_json())
    assert again == report


def test_fingerprint_and_diff_match_the_cli(tmp_path):
    old = json.loads(JUDGE_TOOLS.read_text(encoding="utf-8"))
    new = json.loads(JUDGE_TOOLS.read_text(encoding="utf-8"))
    new["tools"][0]["description"] = "Looks up one order and cancels it."
    new["tools"].append({"name": "extra", "description": "x", "inputSchema": {"type": "object"}})
    (tmp_path / "new.json").write_text(json.dumps(new))
    assert mcpprobe.fingerprint(old) == cli("fingerprint", str(JUDGE_TOOLS)).stdout.decode().strip()
    d = mcpprobe.diff(old, new)
    expected = json.loads(cli("diff", str(JUDGE_TOOLS), str(tmp_path / "new.json"), "--format", "json").stdout)
    assert d.added == expected["added"] == ["extra"]
    assert d.changed == expected["changed"]
    assert not d.identical
    assert mcpprobe.diff(old, old).identical
    # A file is a pathlib.Path or a str ending in .json; other text is JSON text.
    assert mcpprobe.diff(JUDGE_TOOLS, str(tmp_path / "new.json")) == d
    assert mcpprobe.fingerprint(str(JUDGE_TOOLS)) == mcpprobe.fingerprint(JUDGE_TOOLS.read_bytes())


def big_tool_list(n):
    """``n`` tools as JSON text, several MB for thousands: what takes the engine a while."""
    tools = [{"name": f"tool_{i}", "description": "Reads one record of the ledger by its id. " * 8,
              "inputSchema": {"type": "object", "properties": {
                  "id": {"type": "string", "description": "The record's id."},
                  "fields": {"type": "array", "items": {"type": "string"}}}}}
             for i in range(n)]
    return json.dumps({"tools": tools}).encode()


@pytest.mark.parametrize("name", ["fingerprint", "diff"])
def test_fingerprint_and_diff_release_the_gil(name):
    """Another thread runs Python code all through the native call. Were the GIL held, the
    other thread would stop for the whole call (at most one switch interval of it at each end);
    released, it is stopped at most by the OS scheduler. The call is made long (hundreds of ms)
    so that the two differ by far more than any scheduling delay."""
    old = big_tool_list(8000)
    new = old.replace(b'"tool_7"', b'"tool_seven"')
    call = {"fingerprint": lambda: mcpprobe.fingerprint(old),
            "diff": lambda: mcpprobe.diff(old, new)}[name]
    stop = threading.Event()
    ticks = []

    def other():
        while not stop.is_set():
            ticks.append(time.monotonic())

    t = threading.Thread(target=other)
    t.start()
    try:
        while not ticks:  # the other thread is running Python code
            time.sleep(0)
        started = time.monotonic()
        call()
        ended = time.monotonic()
    finally:
        stop.set()
        t.join(timeout=60)
    took = ended - started
    assert took > 0.05, f"the call took {took:.3f} s: too short to tell anything"
    inside = [started] + [x for x in ticks if started < x < ended] + [ended]
    longest = max(b - a for a, b in zip(inside, inside[1:]))
    assert longest < took / 2, (
        f"the other thread stood still {longest:.3f} s of the {took:.3f} s call: the GIL was held")


@pytest.mark.parametrize(
    "call, says",
    [
        (lambda: mcpprobe.check_text("not json"), "not valid JSON"),
        (lambda: mcpprobe.check("[]"), "JSON text goes to check_text"),
        (lambda: mcpprobe.check_text(JUDGE_TOOLS), "takes JSON text"),
        (lambda: mcpprobe.check(JUDGE_TOOLS, rate=10), "rate= is an option of scan"),
        (lambda: mcpprobe.scan("http://127.0.0.1:9/mcp", kind="tools"), "kind= is an option of check"),
        (lambda: mcpprobe.check(JUDGE_TOOLS, ratee=10), "no option named 'ratee'"),
        (lambda: mcpprobe.check(JUDGE_TOOLS, options={"fail_on": "severe"}), "fail_on"),
        (lambda: mcpprobe.check(JUDGE_TOOLS, options=42), "mcpprobe.Options"),
        (lambda: mcpprobe.check(JUDGE_TOOLS, kind="toolz"), "kind="),
        (lambda: mcpprobe.check(JUDGE_TOOLS, checks=["META-99"]), "no check named"),
        (lambda: mcpprobe.check(JUDGE_TOOLS, fail_on="severe"), "fail_on"),
        (lambda: mcpprobe.check(JUDGE_TOOLS, judge=42), "callable"),
        (lambda: mcpprobe.scan("ftp://127.0.0.1/mcp"), "only http:// and https://"),
        (lambda: mcpprobe.scan("http://127.0.0.1:9/mcp", rate=0), "1 to 10 per second"),
        (lambda: mcpprobe.scan("http://127.0.0.1:9/mcp", rate=-1), "1 to 10 requests per second"),
        (lambda: mcpprobe.scan(["python3"], env=["MCPPROBE_TOKEN"]), "never passed"),
        (lambda: mcpprobe.scan(42), "URL"),
    ],
)
def test_bad_arguments_are_usage_errors(call, says):
    with pytest.raises(mcpprobe.UsageError, match=says) as e:
        call()
    assert e.value.exit_code == 64


# --- the judge --------------------------------------------------------------------------


def flag_secrets(tool):
    """Flags a tool whose description asks for secrecy."""
    assert set(tool) <= {"name", "title", "description", "inputSchema", "outputSchema", "annotations"}
    if "secret" in (tool.get("description") or "").lower():
        return [mcpprobe.Verdict("high", "asks the model to keep a secret from the user",
                                 confidence="medium", pointer="/description")]
    return []


def judged(report):
    return [f for f in report.findings if f.check == "META-01"]


def test_a_judge_that_flags_one_tool_makes_one_meta_01_finding_naming_it():
    report = mcpprobe.check(JUDGE_TOOLS, judge=flag_secrets)
    assert report.check("META-01").status == "ran"
    [f] = judged(report)
    assert f.location.tool == "export_notes"
    assert f.location.pointer == "/tools/1/description"
    assert f.rule == "J1" and f.severity == "high" and f.confidence == "medium"
    assert f.subcode == "flag_secrets"
    assert f.message == "judge flag_secrets: asks the model to keep a secret from the user"
    assert "Keep this secret" in f.evidence.text


def test_plain_dicts_and_own_rule_codes_are_verdicts_too():
    def dicts(tool):
        return [{"rule": "MY-7", "severity": "low", "reason": f"looked at {tool['name']}"}]

    report = mcpprobe.check(JUDGE_TOOLS, judge=dicts, fail_on="none")
    assert sorted((f.rule, f.location.tool) for f in judged(report)) == [
        ("MY-7", "export_notes"), ("MY-7", "lookup_order")]


def test_a_judge_that_raises_is_a_meta_01_error_never_a_clean_result():
    def broken(tool):
        raise RuntimeError("the model is down")

    report = mcpprobe.check(JUDGE_TOOLS, judge=broken)
    assert report.outcome == mcpprobe.Outcome.INCOMPLETE
    assert report.exit_code() == 3
    record = report.check("META-01")
    assert record.status == "error"
    assert "RuntimeError: the model is down" in record.reason
    # The deterministic rules' findings are all still there.
    assert any(f.check == "META-02" for f in report.findings)
    # And for those who want an exception, it carries the same report.
    with pytest.raises(mcpprobe.ScanIncomplete) as e:
        report.raise_for_outcome()
    assert e.value.exit_code == 3 and e.value.report is report
    assert str(e.value).startswith(f"{JUDGE_TOOLS}: incomplete: a check errored (META-01: "), str(e.value)
    assert "RuntimeError: the model is down" in str(e.value)


def test_a_judge_that_answers_garbage_is_an_error():
    report = mcpprobe.check(JUDGE_TOOLS, judge=lambda tool: None)
    assert report.outcome == "incomplete"
    assert "not an array" in report.check("META-01").reason
    report = mcpprobe.check(JUDGE_TOOLS, judge=lambda tool: [{"severity": "apocalyptic", "reason": "x"}])
    assert report.outcome == "incomplete"
    assert "severity" in report.check("META-01").reason


def test_a_judge_past_its_budget_is_stopped_waiting_for():
    release = threading.Event()

    def slow(tool):
        release.wait(60)
        return []

    try:
        report = mcpprobe.check(JUDGE_TOOLS, judge=slow, judge_timeout=0.3)
        assert report.outcome == mcpprobe.Outcome.INCOMPLETE
        reason = report.check("META-01").reason
        assert "did not answer within its 0.3-second budget per tool" in reason
        assert "0 of 2 tools reviewed" in reason
    finally:
        release.set()


def test_the_total_budget_bounds_a_judge_that_is_slow_on_every_tool():
    release = threading.Event()
    seen = []

    def slowish(tool):
        seen.append(tool["name"])
        if len(seen) > 1:
            release.wait(60)
        return []

    try:
        budget = mcpprobe.Options(judge_timeout=30, judge_budget=0.5)
        report = mcpprobe.check(JUDGE_TOOLS, judge=slowish, options=budget)
        assert report.outcome == mcpprobe.Outcome.INCOMPLETE
        assert "total budget" in report.check("META-01").reason
    finally:
        release.set()


def test_an_async_judge_works_from_the_blocking_api():
    async def judge_async(tool):
        await asyncio.sleep(0)
        return flag_secrets(tool)

    report = mcpprobe.check(JUDGE_TOOLS, judge=judge_async)
    [f] = judged(report)
    assert f.subcode == "judge_async"


# --- scans of the bundled reference server, started from Python -------------------------


@pytest.fixture(scope="module")
def demo_server():
    proc = subprocess.Popen([str(BIN), "demo", "--serve", "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=ROOT)
    try:
        line = proc.stdout.readline().decode().strip()
        assert line.startswith("http://127.0.0.1:"), line
        yield line
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_scan_of_the_demo_server_finds_what_the_cli_finds(demo_server, tmp_path):
    options = mcpprobe.Options(rate=10, state_dir=tmp_path, fail_on="none")
    report = mcpprobe.scan(demo_server, options=options)
    assert report.outcome == "complete"
    assert report.gate["ownership"].startswith("local")
    assert report.requests_sent > 0
    checks = {f.check for f in report.findings}
    assert {"META-02", "TRANS-03"} <= checks, checks
    out = cli("scan", demo_server, "--rate", "10", "--no-config", "--format", "json",
              env={"MCPPROBE_STATE_DIR": str(tmp_path)})
    expected = json.loads(out.stdout)
    key = lambda f: json.dumps([f["check"], f.get("rule"), f.get("subcode"), f["location"]])
    assert sorted(map(key, report.to_dict()["findings"])) == sorted(map(key, expected["findings"]))
    assert report.exit_code(fail_on="high") == out.returncode == 1


def test_scan_with_a_judge_reviews_every_tool_of_the_server(demo_server, tmp_path):
    seen = []

    def record(tool):
        seen.append(tool["name"])
        return flag_secrets(tool)

    report = mcpprobe.scan(demo_server, rate=10, state_dir=tmp_path, judge=record, checks=["META-01"])
    assert report.check("META-01").status == "ran"
    assert seen and len(seen) == len(set(seen))
    assert {t for t in seen} >= {"run_command"}, seen


def test_scan_async_awaits_an_async_judge_on_the_callers_loop(demo_server, tmp_path):
    loops = []

    async def on_loop(tool):
        loops.append(asyncio.get_running_loop())
        await asyncio.sleep(0)
        return [{"severity": "info", "reason": "seen"}] if tool["name"] == "run_command" else []

    async def main():
        report = await mcpprobe.scan_async(demo_server, rate=10, state_dir=tmp_path, judge=on_loop,
                                           checks="META-01,META-02")
        return report, asyncio.get_running_loop()

    report, loop = asyncio.run(main())
    assert loops and all(l is loop for l in loops)
    [f] = judged(report)
    assert f.location.tool == "run_command" and f.severity == "info"
    assert report.check("META-02").status == "ran"


def test_an_async_judge_past_its_budget_is_cancelled_on_the_loop(demo_server, tmp_path):
    cancelled = []

    async def stuck(tool):
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(tool["name"])
            raise
        return []

    async def main():
        return await mcpprobe.scan_async(demo_server, rate=10, state_dir=tmp_path, judge=stuck,
                                         checks=["META-01"], judge_timeout=0.3)

    report = asyncio.run(main())
    assert report.outcome == mcpprobe.Outcome.INCOMPLETE
    assert report.check("META-01").status == "error"
    assert len(cancelled) == 1


# --- the gate, from Python --------------------------------------------------------------

NS, VETH, VETH_NS = "mcpprobe-test", "mcpp-h0", "mcpp-n0"
HOST_IP, NS_IP, PORT = "10.200.0.1", "10.200.0.2", 8080


def ip(*args):
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


@pytest.fixture
def remote_host():
    """A server on a host that is not loopback (a network namespace with a veth pair), as the
    Rust tests make it; the same lock keeps the two suites off each other's subnet."""
    with open(os.path.join("/tmp", "mcpprobe-netns.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for cleanup in (["netns", "del", NS], ["link", "del", VETH]):
            subprocess.run(["ip", *cleanup], capture_output=True, timeout=20)
        server = None
        try:
            ip("netns", "add", NS)
            ip("link", "add", VETH, "type", "veth", "peer", "name", VETH_NS)
            ip("link", "set", VETH_NS, "netns", NS)
            ip("addr", "add", f"{HOST_IP}/30", "dev", VETH)
            ip("link", "set", VETH, "up")
            ip("-n", NS, "addr", "add", f"{NS_IP}/30", "dev", VETH_NS)
            ip("-n", NS, "link", "set", VETH_NS, "up")
            ip("-n", NS, "link", "set", "lo", "up")
            server = subprocess.Popen(
                ["ip", "netns", "exec", NS, sys.executable, str(ROOT / "tests/support/count_server.py"),
                 NS_IP, str(PORT), "{}"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            assert server.stdout.readline().strip() == b"READY"
            yield server
        finally:
            if server is not None:
                server.kill()
                server.wait(timeout=20)
            for cleanup in (["netns", "del", NS], ["link", "del", VETH]):
                subprocess.run(["ip", *cleanup], capture_output=True, timeout=20)


def test_the_gate_refuses_an_unproven_remote_target_and_sends_it_nothing(remote_host, tmp_path):
    judged_tools = []
    report = mcpprobe.scan(f"http://{NS_IP}:{PORT}/mcp", state_dir=tmp_path, rate=10,
                           judge=lambda t: judged_tools.append(t) or [])
    assert report.outcome is mcpprobe.Outcome.REFUSED
    assert report.refusal == "ownership"
    assert report.exit_code() == 2
    with pytest.raises(mcpprobe.GateRefused) as e:
        report.raise_for_outcome()
    err = e.value
    assert err.exit_code == 2 and err.report is report
    assert str(err).startswith(f"http://{NS_IP}:{PORT}/mcp: refused by the gate (ownership): "), str(err)
    assert judged_tools == []
    remote_host.kill()
    remote_host.wait(timeout=20)
    seen = [json.loads(l) for l in remote_host.stdout.read().splitlines() if l.strip()]
    # The opt-out GET is the only request the host got (SPEC §1.1, §1.2).
    assert [(r["method"], r["path"]) for r in seen] == [("GET", "/.well-known/mcpprobe-opt-out")]
    assert err.report.requests_sent == 1


# --- the types ------------------------------------------------------------------------------


def test_the_stubs_type_check_a_users_code_with_mypy(tmp_path):
    usage = tmp_path / "usage.py"
    usage.write_text(
        "import pathlib\n"
        "import mcpprobe\n"
        "from typing import Any, Dict, List\n"
        "def judge(tool: Dict[str, Any]) -> List[mcpprobe.Verdict]:\n"
        "    return [mcpprobe.Verdict(mcpprobe.Severity.LOW, 'r'), mcpprobe.Verdict('high', 'r')]\n"
        "r: mcpprobe.Report = mcpprobe.check_text('[]', judge=judge, fail_on='medium')\n"
        "r = mcpprobe.check(pathlib.Path('tools.json'), kind='tools', time_cap=5.0)\n"
        "r = mcpprobe.check('tools.json').raise_for_outcome()\n"
        "opts = mcpprobe.Options(rate=10, fail_on=mcpprobe.Severity.CRITICAL)\n"
        "r = mcpprobe.scan('http://127.0.0.1:3000/mcp', options=opts.replace(rate=3), token='t')\n"
        "r = mcpprobe.scan(['python3', 's.py'], options={'env': ['HOME']}, state_dir=pathlib.Path('.'))\n"
        "code: int = r.exit_code(fail_on='none')\n"
        "names: List[str] = [f.check for f in r.findings]\n"
        "worst: List[mcpprobe.Severity] = [f.severity for f in r.findings if f.severity >= 'high']\n"
        "done: bool = r.outcome is mcpprobe.Outcome.COMPLETE\n"
        "ran: bool = r.check('META-01').status == mcpprobe.Status.RAN\n"
        "d: mcpprobe.Diff = mcpprobe.diff('[]', pathlib.Path('new.json'))\n"
        "fp: str = mcpprobe.fingerprint(b'[]')\n"
    )
    bad = {
        "x: int = mcpprobe.check('t.json').findings\n": "Incompatible types in assignment",
        "mcpprobe.check('t.json', fail_on='severe')\n": 'Argument "fail_on" to "check" has incompatible type',
        "mcpprobe.scan('http://h/mcp', ratee=3)\n": 'Unexpected keyword argument "ratee"',
        "mcpprobe.scan('http://h/mcp', rate='fast')\n": 'Argument "rate" to "scan" has incompatible type',
        "mcpprobe.Options(min_confidence='certain')\n": 'Argument "min_confidence" to "Options"',
        "s: mcpprobe.Severity = 'high'\n": "Incompatible types in assignment",
    }
    run = lambda p: subprocess.run([sys.executable, "-m", "mypy", "--strict", str(p)],
                                   capture_output=True, timeout=300, cwd=tmp_path)
    good = run(usage)
    assert good.returncode == 0, good.stdout.decode()
    for i, (line, says) in enumerate(bad.items()):
        path = tmp_path / f"bad{i}.py"
        path.write_text("import mcpprobe\n" + line)
        wrong = run(path)
        assert wrong.returncode == 1 and says in wrong.stdout.decode(), (line, wrong.stdout.decode())


def test_the_package_itself_type_checks_with_mypy_strict():
    package = pathlib.Path(mcpprobe.__file__).parent
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "-p", "mcpprobe"],
                         capture_output=True, timeout=300, cwd=package.parent)
    assert out.returncode == 0, out.stdout.decode()


def test_options_are_one_object_with_keyword_overrides():
    o = mcpprobe.Options(fail_on="none", rate=10, token="secret-token-0123456789")
    assert "secret-token" not in repr(o), "the token stays out of the repr"
    assert o.replace(rate=3).rate == 3 and o.rate == 10
    with pytest.raises(mcpprobe.UsageError, match="no option named 'rat'"):
        o.replace(rat=3)
    # A keyword overrides the object's field; the object's other fields stay.
    strict = mcpprobe.Options(fail_on="low", min_confidence="high")
    assert mcpprobe.check(JUDGE_TOOLS, options=strict).policy == {"fail_on": "low", "min_confidence": "high"}
    assert mcpprobe.check(JUDGE_TOOLS, options=strict, fail_on="none").policy == {
        "fail_on": None, "min_confidence": "high"}
    # A dict of the same keys is options too; scan's fields are ignored by check when they come
    # in the shared object, refused as keywords.
    assert mcpprobe.check(JUDGE_TOOLS, options={"skip_checks": ["META-02"]}).check("META-02").status == "skipped"
    assert mcpprobe.check(JUDGE_TOOLS, options=o).exit_code() == 0
    # The one definition: the TypedDict of keywords names the dataclass's fields, and the scan's
    # fields are what the native ScanOptions reads.
    import dataclasses
    fields = [f.name for f in dataclasses.fields(mcpprobe.Options)]
    assert list(mcpprobe.OptionValues.__annotations__) == fields
    native = set(mcpprobe._scan_kwargs(mcpprobe.Options()))
    assert native == set(fields) - {"kind", "time_cap"}


def test_a_judge_still_running_at_exit_does_not_abort_the_interpreter(tmp_path):
    script = tmp_path / "late.py"
    script.write_text(
        "import time, mcpprobe\n"
        "def busy(tool):\n"
        "    end = time.time() + 3\n"
        "    while time.time() < end:\n"
        "        pass\n"
        "    return []\n"
        "try:\n"
        f"    mcpprobe.check({str(JUDGE_TOOLS)!r}, judge=busy, judge_timeout=0.2).raise_for_outcome()\n"
        "except mcpprobe.ScanIncomplete as e:\n"
        "    print(e.report.check('META-01').status)\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=60)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().strip() == "error"


# --- one host-keyed rate for every scan of the process, and MCPPROBE_TOKEN --------------------


@pytest.fixture
def counting_server():
    """A minimal MCP server over HTTP on loopback (initialize, tools/list, ping; anything else
    is "method not found"), in this process (a scan releases the GIL); yields (url, arrivals),
    where arrivals() is what reached it so far: one dict per request (method, headers, t, the
    time.monotonic() of its arrival)."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    lines = []
    tools = [{"name": "get_weather", "description": "Returns the weather of a city.",
              "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, status, body=b"", ctype="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def handle_any(self):
            lines.append({"method": self.command,
                          "headers": {k.lower(): v for k, v in self.headers.items()},
                          "t": time.monotonic()})
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.command != "POST":
                return self.answer(405, b"{}")
            try:
                msg = json.loads(raw)
            except ValueError:
                return self.answer(400, b"{}")
            if not isinstance(msg, dict) or "id" not in msg:
                return self.answer(202)
            method, params = msg.get("method"), msg.get("params") or {}
            if method == "initialize":
                result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                          "capabilities": {"tools": {}},
                          "serverInfo": {"name": "counting", "version": "1"}}
            elif method == "tools/list":
                result = {"tools": tools}
            elif method == "ping":
                result = {}
            else:
                body = {"jsonrpc": "2.0", "id": msg["id"],
                        "error": {"code": -32601, "message": "method not found"}}
                return self.answer(200, json.dumps(body).encode())
            body = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
            self.answer(200, json.dumps(body).encode())

        do_GET = do_POST = do_DELETE = do_PUT = do_OPTIONS = handle_any

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp", lambda: list(lines)
    finally:
        server.shutdown()
        server.server_close()


def worst_second(times):
    """The most of ``times`` (seconds) inside one window of a second."""
    times = sorted(times)
    return max((sum(1 for u in times[i:] if u - t < 1.0) for i, t in enumerate(times)), default=0)


def test_two_scans_of_one_host_at_rates_5_and_10_stay_under_5_at_the_server(counting_server,
                                                                            tmp_path):
    url, arrivals = counting_server
    reports, errors = {}, []

    def run(rate):
        try:
            reports[rate] = mcpprobe.scan(url, rate=rate, state_dir=tmp_path, fail_on="none")
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=run, args=(r,)) for r in (5, 10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert not errors, errors
    assert set(reports) == {5, 10}
    times = [a["t"] for a in arrivals()]
    sent = reports[5].requests_sent + reports[10].requests_sent
    assert len(times) >= 20, f"both scans sent enough to measure ({len(times)})"
    assert len(times) == sent, (len(times), sent)
    # Together they kept to the lower rate: 5 a second, a request every 200 ms (a 6th at the
    # window's very edge is the same spacing; a wake-up may come a few ms late). That holds while
    # both run: once the slower scan has ended, the faster one goes on at its own rate, by
    # design (net::politeness). Each scan is told apart by its trace id.
    by_scan = {}
    for a in arrivals():
        trace = a["headers"].get("traceparent", "--").split("-")[1]
        by_scan.setdefault(trace, []).append(a["t"])
    assert len(by_scan) == 2, sorted(by_scan)
    both_end = min(max(ts) for ts in by_scan.values())
    together = [t for t in times if t <= both_end]
    assert len(together) >= 20, f"both scans ran together long enough to measure ({len(together)})"
    assert worst_second(together) <= 6, (worst_second(together), sorted(together))
    # One gap between two arrivals also holds the scheduling delay of each request (on a busy
    # machine one request can arrive 70 ms late and the next on time), so the spacing is read
    # over five requests at a time: at 5 a second they span 0.8 s; two limiters that did not
    # share the host's rate (15 a second) would span 0.27 s. 0.2 s is left for late wake-ups.
    ordered = sorted(together)
    spans = [b - a for a, b in zip(ordered, ordered[4:])]
    assert min(spans) >= 0.6, f"five requests within {min(spans):.3f} s"


def test_mcpprobe_token_is_the_default_token_like_the_cli(counting_server, tmp_path, monkeypatch):
    url, arrivals = counting_server
    monkeypatch.setenv("MCPPROBE_TOKEN", "py-env-token-0123456789")
    report = mcpprobe.scan(url, rate=10, state_dir=tmp_path, fail_on="none")
    auth = {a["headers"].get("authorization") for a in arrivals() if a["method"] == "POST"}
    assert "Bearer py-env-token-0123456789" in auth, auth
    assert "py-env-token-0123456789" not in json.dumps(report.to_dict())
    # A token given wins over the variable.
    before = len(arrivals())
    mcpprobe.scan(url, rate=10, state_dir=tmp_path, fail_on="none",
                  token="given-token-0123456789")
    auth = {a["headers"].get("authorization") for a in arrivals()[before:] if a["method"] == "POST"}
    assert "Bearer given-token-0123456789" in auth and not any(
        "py-env-token" in (v or "") for v in auth), auth


# --- discover and scan_discovered (issue 26) ---------------------------------------------------


def test_discover_lists_the_clients_servers_as_the_cli_does(tmp_path):
    home = ROOT / "fixtures" / "discover" / "home"
    project = ROOT / "fixtures" / "discover" / "project"
    found = mcpprobe.discover(home=home, project=project)
    clients = {c["client"] for c in found.configs}
    assert {"claude-desktop", "claude-code", "cursor", "windsurf", "zed", "continue", "codex",
            "vscode", "gemini"} <= clients
    names = {(s.client, s.name) for s in found.servers}
    assert ("cursor", "search") in names and ("vscode", "github") in names
    search = next(s for s in found.servers if s.name == "search")
    assert search.command == ["uvx", "search-mcp-fixture", "--api-key", "[redacted]"]
    assert [f.location.server for f in found.findings] == ["db", "search", "docs", "calendar"]
    assert all(f.rule == "C12" for f in found.findings)
    listed = json.loads(cli("discover", "--format", "json", "--project", str(project),
                            env={"HOME": str(home)}).stdout)
    assert [s["name"] for s in listed["servers"]] == [s.name for s in found.servers]


def test_scan_discovered_finds_what_only_the_set_shows(tmp_path):
    script = ROOT / "tests" / "support" / "set_stdio.py"
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        role: {"command": sys.executable, "args": [str(script), role]} for role in ("pages", "ledger", "chat")
    }}), encoding="utf-8")
    untrusted = mcpprobe.scan_discovered(home=tmp_path / "no-home", project=tmp_path,
                                         state_dir=tmp_path / "state")
    assert [s["status"] for s in untrusted.discovery["servers"]] == ["not_scanned"] * 3
    dry = mcpprobe.scan_discovered(home=tmp_path / "no-home", project=tmp_path, dry_run=True,
                                   trust_project=True, state_dir=tmp_path / "state")
    assert [s["status"] for s in dry.discovery["servers"]] == ["would_scan"] * 3
    assert dry.requests_sent == 0
    report = mcpprobe.scan_discovered(home=tmp_path / "no-home", project=tmp_path,
                                      trust_project=True, state_dir=tmp_path / "state")
    assert report.outcome == mcpprobe.Outcome.COMPLETE
    cross = {(f.rule, f.location.server) for f in report.findings if f.rule in ("C1", "P4")}
    assert ("C1", "chat") in cross and ("P4", "ledger") in cross
    assert report.exit_code() == 1
