"""The command line as a whole (issue 22, items 8, 10, 12, 22): every option of every subcommand has
help text with its default, every numeric option is range-checked while parsing, an output path of
the wrong kind is refused before any work, and Ctrl-C ends without a traceback."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import textwrap

import pytest

from egohorizon import cli
from egohorizon.commands import _args
from egohorizon.commands._args import HelpFormatter, iter_parsers


def _options():
    """(command line, action) for every argument of every (sub-)subcommand."""
    for name, parser in iter_parsers(cli.build_parser()):
        for action in parser._actions:
            if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                yield name, action


def _label(name: str, action: argparse.Action) -> str:
    return f"{name} {'/'.join(action.option_strings) or action.dest}"


def test_the_walk_reaches_sub_subcommands():
    names = {name for name, _ in iter_parsers(cli.build_parser())}
    assert {"egohorizon shards build", "egohorizon qa serve", "egohorizon caption run",
            "egohorizon data convert", "egohorizon score agreement", "egohorizon hands clips"} <= names


def test_every_option_of_every_subcommand_has_help_text():
    missing = [_label(name, action) for name, action in _options()
               if not action.help or action.help == argparse.SUPPRESS]
    assert missing == []


def test_every_option_with_a_default_shows_it_in_help():
    parsers = list(iter_parsers(cli.build_parser()))
    assert {p.formatter_class for _, p in parsers} == {HelpFormatter}
    silent = []
    for name, parser in parsers:
        formatter = parser._get_formatter()
        for action in parser._actions:
            shown = action.default not in (None, argparse.SUPPRESS, [], ()) and not isinstance(action.default, bool)
            if shown and action.option_strings and "default" not in formatter._get_help_string(action).lower():
                silent.append(_label(name, action))
        parser.format_help()  # renders: no stray % in a help text
    assert silent == []


def test_pipeline_help_names_units_and_defaults(capsys):
    with pytest.raises(SystemExit):
        cli.main(["pipeline", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--window WINDOW window length in seconds (default: 30.0)" in text
    assert "--val-frac VAL_FRAC share of days held out for val, 0-1 (default: 0.15)" in text
    with pytest.raises(SystemExit):
        cli.main(["shards", "build", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--jpeg-quality JPEG_QUALITY JPEG quality of the stored downscaled frames, 1-100 (default 90" in text
    assert "--samples-per-shard SAMPLES_PER_SHARD window samples per tar shard (default 32" in text


def test_no_numeric_option_is_unbounded():
    bare = [_label(name, action) for name, action in _options() if action.type in (int, float)]
    assert bare == []


@pytest.mark.parametrize("argv, option, value, expected", [
    (["shards", "build", "--demo", "--jpeg-quality", "500"], "--jpeg-quality", "500", "from 1 to 100"),
    (["shards", "build", "--demo", "--window", "0"], "--window", "0", "> 0"),
    (["shards", "build", "--demo", "--samples-per-shard", "-3"], "--samples-per-shard", "-3", ">= 1"),
    (["abstract", "ev.jsonl", "--model", "m", "--levels", "7"], "--levels", "7", "from 2 to 5"),
    (["points", "--events", "ev.jsonl", "--val-frac", "1.5"], "--val-frac", "1.5", "from 0 to 1"),
    (["caption", "shards", "--model", "m", "--max-failures", "nan"], "--max-failures", "nan", "from 0 to 1"),
    (["qa", "generate", "--test-frac", "-0.1"], "--test-frac", "-0.1", "from 0 to 1"),
    # whole bounds are written in full, not as 4.29497e+09
    (["points", "--events", "ev.jsonl", "--seed", "-1"], "--seed", "-1", "from 0 to 4294967295"),
    (["pipeline", "--demo", "--captioner", "c", "--abstractor", "a", "--long-side", "abc"], "--long-side",
     "abc", "whole number >= 8"),
])
def test_out_of_range_numbers_are_refused_while_parsing(capsys, tmp_path, argv, option, value, expected):
    out = tmp_path / ("out.jsonl" if argv[:2] == ["qa", "generate"] else "out")
    with pytest.raises(SystemExit) as exit_info:
        cli.main([*argv, "--out", str(out)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert f"error: argument {option}: expected a" in err and expected in err and repr(value) in err
    assert not out.exists()  # refused before any work


def test_qa_serve_port_is_a_tcp_port(capsys):
    with pytest.raises(SystemExit):
        cli.main(["qa", "serve", "--model", "m", "--port", "70000"])
    assert "argument --port: expected a whole number from 0 to 65535, got '70000'" in capsys.readouterr().err


def test_in_range_values_still_parse():
    args = cli.build_parser().parse_args(["shards", "build", "--demo", "--out", "o", "--jpeg-quality", "100",
                                          "--window", "2.5", "--min-frames", "0"])
    assert (args.jpeg_quality, args.window, args.min_frames) == (100, 2.5, 0)


# Item 10: the nine commands that crashed on an output of the wrong kind, each refused while parsing.
# FILE stands for an existing plain file, DIR for an existing folder.
WRONG_OUTPUTS = [
    (["shards", "build", "--demo", "--out", "FILE"], "--out"),
    (["points", "--events", "ev.jsonl", "--out", "FILE"], "--out"),
    (["deid", "images", "--out", "FILE"], "--out"),
    (["hands", "detect", "images", "--out", "DIR"], "--out"),
    (["caption", "shards", "--model", "m", "--out", "FILE"], "--out"),
    (["abstract", "ev.jsonl", "--model", "m", "--out", "FILE"], "--out"),
    (["compare", "run_a", "run_b", "--out", "FILE"], "--out"),
    (["data", "convert", "epic-kitchens", "--root", "r", "--out", "FILE"], "--out"),
    (["data", "stats", "ev.jsonl", "--plot", "DIR"], "--plot"),
    (["qa", "generate", "--out", "DIR"], "--out"),
    (["hands", "clips", "shards", "--labels", "l.jsonl", "--out", "FILE/sub"], "--out"),
]


@pytest.mark.parametrize("argv, option", WRONG_OUTPUTS, ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_an_output_of_the_wrong_kind_is_refused_before_any_work(capsys, tmp_path, argv, option):
    blocker, folder = tmp_path / "existing.txt", tmp_path / "existing_dir"
    blocker.write_text("keep me\n")
    folder.mkdir()
    argv = [a.replace("FILE", str(blocker)).replace("DIR", str(folder)) for a in argv]
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err
    assert f"error: argument {option}: " in err
    if any(a == str(blocker) for a in argv):
        assert f"{blocker} is a file; expected a folder" in err
    elif any(a == str(folder) for a in argv):
        assert f"{folder} is a folder; expected a file name" in err
    else:
        assert f"{blocker} is a file, not a folder" in err
    assert blocker.read_text() == "keep me\n" and list(folder.iterdir()) == []


def test_out_types_accept_new_and_matching_paths(tmp_path):
    assert _args.out_dir(str(tmp_path)) == str(tmp_path)
    assert _args.out_dir(str(tmp_path / "new" / "deeper")) == str(tmp_path / "new" / "deeper")
    (tmp_path / "f.jsonl").write_text("")
    assert _args.out_file(str(tmp_path / "f.jsonl")) == str(tmp_path / "f.jsonl")
    assert not (tmp_path / "new").exists()  # checking creates nothing


# Item 12: Ctrl-C.
def test_keyboard_interrupt_in_a_handler_exits_130_without_traceback(capsys, monkeypatch):
    from egohorizon.commands import demo

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "run_demo", interrupted)  # register() reads it when main builds the parser
    assert cli.main(["demo"]) == 130
    err = capsys.readouterr().err
    assert "interrupted; rerun the same command to resume" in err and "Traceback" not in err


def test_sigint_during_a_command_exits_130_with_the_message(tmp_path):
    # A real SIGINT, delivered by the OS while a handler runs (as `timeout -s INT` or Ctrl-C does).
    script = textwrap.dedent("""
        import os, signal, sys, time
        from egohorizon import cli
        from egohorizon.commands import demo

        def slow(args):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
            return 0

        demo.run_demo = slow
        sys.exit(cli.main(["demo"]))
    """)
    result = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=tmp_path)
    assert result.returncode == 130
    assert "interrupted; rerun the same command to resume" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_interrupted_jsonl_write_leaves_no_temp_file(tmp_path):
    from egohorizon.schema import write_jsonl

    def records():
        yield {"id": "a"}
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_jsonl(tmp_path / "events.jsonl", records())
    assert list(tmp_path.iterdir()) == []


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid  # finished and reaped: no process has it (until the system reuses it)


def test_data_convert_rerun_removes_the_temp_files_an_interrupted_run_left(tmp_path):
    from egohorizon.data.sources._common import Conversion

    out = tmp_path / "out"
    out.mkdir()
    stale = out / f".events.jsonl.tmp-{_dead_pid()}"
    stale.write_text('{"id": "half a')
    alive = out / f".events.jsonl.tmp-{os.getppid()}"  # a writer still running keeps its file
    alive.write_text("")
    other = out / ".notes.txt.tmp-1"  # not this command's output: left alone
    other.write_text("")
    written = Conversion(source="test").write(out)
    assert set(written) == {"metadata"}
    assert not stale.exists() and alive.exists() and other.exists()
