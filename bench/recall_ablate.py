"""Which of issue 31's recall knobs carry over to questions they were not chosen on.

Each knob of issue 31 was chosen on the dev split of ``bench/data/recall_questions.json``
(set A). On one cached store (``bench.recall_quality``'s, real MiniLM), every question
of a question file (``--questions``: set A's dev split, or set B,
``bench/data/recall_questions_b.json``, written over dev sessions only) is asked with
each knob at issue 31's value and with that knob alone off (its value before issue 31),
the others at their default, from no project and from the question's project. Printed
per knob: hit@5, hit@10 and the agent view (MCP's ``recall``, k 8, budget 2000:
``recall_quality.agent_view``), each as the paired delta on minus off with its
session-bootstrap 95% interval,
and the questions the knob gains and loses (at 5 and in the view). The last row turns
every knob off together (the bench's ``today`` settings, part_penalty 0 too).

A question a knob cannot change is not asked again: a turn-role bonus only acts on a
question with its cue (``cause`` words for ``cause_bonus``, ``lexicon.asks_shown`` for
``shown_bonus``, an ``ending`` word for ``ending_bonus``, a tool's words for
``named_bonus``, a ``call`` ask for ``call_bonus``, an ``output`` ask for
``output_bonus``, a context clause before the ask for ``ask_weight``), so for the
others the default's answer stands (the column "asked" says how many were).

``--cv K``: K folds by session over the questions (whole sessions per fold). For each
knob with a small grid (its off value, half, issue 31's value, double), the value with the best
hit@5 + agent view (from no project plus from the project) on K-1 folds is scored on the
held-out fold; printed next to the in-sample best value, issue 31's value, off and every
knob off: whether tuning that knob on this data generalizes at all. Ties go to the
value listed first (off, then the smaller).

``--no-all-off`` leaves that last row out (it costs two passes).

``--rule``: the pre-registered rule of issue 31's set B (RECALL_LOG.md, 2026-11-29): a
knob stays on only when, from no project and from the project, its hit@5 delta plus its
agent-view delta is >= 0.

Passes are kept in ``--results`` (a JSON file; the key holds the question file's and
the engine code's hashes), so a second run (``--cv`` after the ablation) asks only what
is new.

    python -m bench.recall_ablate --store-cache DIR [--questions FILE] [--rule]
        [--cv 5] [--knobs a,b] [--results FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import recall_quality as rq

WHERE = ("none", "cwd")  # asked from no project, from the question's project
Outcome = dict[str, tuple[int | None, int | None]]  # question id -> (rank, view rank)
Settings = dict[str, dict[str, Any]]  # {"recall": {...}, "rerank": {...}}


Make = Callable[[Any, Any], Settings]  # (engine, value) -> the settings that set it
Read = Callable[[Any], Any]  # config -> the knob's value in it


def _role(name: str) -> tuple[Make, Read]:
    def make(eng: Any, value: Any) -> Settings:
        roles = dataclasses.replace(eng.rt.cfg.recall.turn_roles, **{name: value})
        return {"recall": {"turn_roles": roles}}
    return make, lambda cfg: getattr(cfg.recall.turn_roles, name)


def _recall(name: str) -> tuple[Make, Read]:
    return (lambda eng, value: {"recall": {name: value}},
            lambda cfg: getattr(cfg.recall, name))


def _rerank(name: str) -> tuple[Make, Read]:
    return (lambda eng, value: {"rerank": {name: value}},
            lambda cfg: getattr(cfg.rerank, name))


def _fitted_total() -> float:
    from engine.lab import TRANSCRIPT_FITTED

    return sum(w for w in TRANSCRIPT_FITTED.values() if w > 0)


def _project_make(eng: Any, value: Any) -> Settings:
    """The transcript profile with ``same_project`` at ``value`` in the fitted units
    (profiles.TRANSCRIPT_FITTED), the other weights as they are (not rescaled)."""
    profiles = dict(eng.rt.cfg.rerank.profiles)
    profiles["transcript"] = {**profiles["transcript"], "same_project": value / _fitted_total()}
    return {"rerank": {"profiles": profiles}}


def _project_read(cfg: Any) -> Any:
    return round(cfg.rerank.profiles["transcript"].get("same_project", 0.0) * _fitted_total(), 9)


@dataclass(frozen=True)
class Knob:
    name: str  # the config key
    on: Any  # issue 31's value
    off: Any  # its value before issue 31
    grid: tuple[Any, ...]  # for --cv: off first
    set_read: tuple[Make, Read]
    where: tuple[str, ...] = WHERE
    cue: str | None = None  # a turn role's cue: only questions with it are asked again

    def make(self, eng: Any, value: Any) -> Settings:
        return self.set_read[0](eng, value)

    def read(self, cfg: Any) -> Any:
        return self.set_read[1](cfg)


KNOBS = (
    Knob("recall.turn_roles.cause_bonus", 0.03, 0.0, (0.0, 0.015, 0.03, 0.06),
         _role("cause_bonus"), cue="cause"),
    Knob("recall.turn_roles.shown_bonus", 0.05, 0.0, (0.0, 0.025, 0.05, 0.1),
         _role("shown_bonus"), cue="shown"),
    Knob("recall.turn_roles.named_bonus", 0.05, 0.0, (0.0, 0.025, 0.05, 0.1),
         _role("named_bonus"), cue="named"),
    Knob("recall.turn_roles.ending_bonus", 0.05, 0.0, (0.0, 0.025, 0.05, 0.1),
         _role("ending_bonus"), cue="ending"),
    Knob("recall.turn_roles.call_bonus", 0.1, 0.0, (0.0, 0.05, 0.1, 0.2),
         _role("call_bonus"), cue="call"),
    Knob("recall.turn_roles.output_bonus", 0.05, 0.0, (0.0, 0.05, 0.1, 0.2),
         _role("output_bonus"), cue="output"),
    Knob("recall.turn_roles.repeat_penalty", 0.1, 0.0, (0.0, 0.05, 0.1, 0.2),
         _role("repeat_penalty")),
    Knob("recall.turn_roles.ask_weight", 0.05, 0.0, (0.0, 0.025, 0.05, 0.1),
         _role("ask_weight"), cue="ask"),
    Knob("rerank.session_expand_words", 5, 0, (0, 2, 5, 10), _rerank("session_expand_words")),
    Knob("rerank.session_expand", 3, 1, (1, 2, 3, 5), _rerank("session_expand")),
    Knob("recall.part_penalty", 0.05, 0.0, (0.0, 0.025, 0.05, 0.1), _recall("part_penalty")),
    Knob("recall.adapt", True, False, (False, True), _recall("adapt")),
    Knob("recall.part_lines", True, False, (False, True), _recall("part_lines")),
    Knob("recall.part_from", "call", "candidates", ("candidates", "call"), _recall("part_from")),
    Knob("recall.part_lines_by", "weight", "words", ("words", "weight"),
         _recall("part_lines_by")),
    Knob("recall.budget_fill", "best", "none", ("none", "best", "even"), _recall("budget_fill")),
    Knob("project ranking (transcript same_project)", 5.0, 0.0, (0.0, 2.5, 5.0, 10.0),
         (_project_make, _project_read), where=("cwd",)),
)
ALL_OFF = "all issue-31 knobs off"


def all_off(eng: Any) -> Settings:
    """Every knob off together: the bench's ``today`` settings (issue 31's ranking
    features off, one session expanded, its profile), no part penalty and a part's lines
    by the query's words (moot while ``part_lines`` is off, but the row says it)."""
    today = rq.today_settings(eng)
    return {"recall": {**today["recall"], "part_penalty": 0.0, "part_lines_by": "words"},
            "rerank": today["rerank"]}


def cue_of(knob: Knob, eng: Any, tools: set[str]) -> Callable[[str], bool] | None:
    """Whether a question has the knob's cue (None: every question can change)."""
    from engine.lab import asks_shown, context_and_ask, named_tools

    roles = eng.rt.cfg.recall.turn_roles
    if knob.cue in ("cause", "ending", "call", "output"):
        cue = knob.cue
        return lambda q: bool(roles.asks(q).get(cue))
    if knob.cue == "shown":
        return lambda q: asks_shown(q)
    if knob.cue == "named":
        return lambda q: bool(named_tools(q, tools))
    if knob.cue == "ask":
        return lambda q: context_and_ask(q) is not None
    return None


def stored_tools(eng: Any) -> set[str]:
    """Every tool named by a stored transcript chunk (what ``named_bonus`` can match)."""
    return {str(t) for (t,) in eng.rt.vault._query(
        "SELECT DISTINCT json_extract(c.meta, '$.tool') FROM chunks c "
        "JOIN sources s ON s.id = c.source_id WHERE s.kind = 'transcript' "
        "AND json_extract(c.meta, '$.tool') IS NOT NULL")}


def code_hash() -> str:
    """The engine's code (every module): a pass is reused only under the same code."""
    h = hashlib.sha256()
    for p in sorted((rq.REPO / "engine").rglob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()[:10]


class Passes:
    """Outcomes of (setting, where) over the questions, asked once, kept in a file."""

    def __init__(self, eng: Any, questions: list[dict[str, Any]], path: Path | None,
                 tag: str) -> None:
        self.eng, self.questions, self.path, self.tag = eng, questions, path, tag
        self.kept: dict[str, Outcome] = {}
        if path is not None and path.is_file():
            data = json.loads(path.read_text())
            if data.get("tag") == tag:
                self.kept = {k: {q: (r[0], r[1]) for q, r in v.items()}
                             for k, v in data["passes"].items()}

    def _save(self) -> None:
        if self.path is not None:
            self.path.write_text(json.dumps({"tag": self.tag, "passes": self.kept}))

    def get(self, key: str, where: str, settings: Settings,
            only: Callable[[str], bool] | None = None, base: Outcome | None = None
            ) -> Outcome:
        """The outcome of ``settings`` asked from ``where``; with ``only``, questions
        without the cue take ``base``'s outcome."""
        full = f"{key}|{where}"
        if full in self.kept:
            return self.kept[full]
        asked = [q for q in self.questions if only is None or only(q["q"])]
        t, cpu = time.perf_counter(), time.process_time()
        cwd = where == "cwd"
        ranks, _, _ = rq.rank_all(rq.configured_ranker(self.eng, from_project=cwd,
                                                        **settings), asked)
        views, _ = rq.view_all(rq.agent_view(self.eng, from_project=cwd, **settings), asked)
        out = dict(base or {})
        out.update({q["id"]: (r, v) for q, r, v in zip(asked, ranks, views, strict=True)})
        print(f"  {full}: {len(asked)} asked, {time.perf_counter() - t:.0f} s "
              f"({time.process_time() - cpu:.0f} s CPU), load {os.getloadavg()[0]:.1f}",
              file=sys.stderr, flush=True)
        self.kept[full] = out
        self._save()
        return out


def value_pass(passes: Passes, knob: Knob, value: Any, where: str, base: dict[str, Outcome],
               only: Callable[[str], bool] | None) -> Outcome:
    """The outcome of ``knob`` at ``value`` (the default pass when it is the engine's)."""
    if value == knob.read(passes.eng.rt.cfg):
        return base[where]
    return passes.get(f"{knob.name}={value}", where, knob.make(passes.eng, value), only,
                      base[where])


def hit(outcome: tuple[int | None, int | None], measure: str) -> bool:
    rank, view = outcome
    if measure == "view":
        return view is not None
    return rank is not None and rank <= int(measure.split("@")[1])


def paired(questions: Sequence[dict[str, Any]], a: Outcome, b: Outcome, measure: str,
           boot: int, seed: int = 0) -> tuple[float, float, float]:
    """Mean of a minus b over the questions, with its session-bootstrap 95% interval."""
    by_session: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        by_session[q["session"]].append(
            float(hit(a[q["id"]], measure)) - float(hit(b[q["id"]], measure)))
    groups = list(by_session.values())
    rnd = random.Random(seed)
    draws = []
    for _ in range(boot):
        drawn = [rnd.choice(groups) for _ in groups]
        n = sum(len(g) for g in drawn)
        draws.append(sum(sum(g) for g in drawn) / n)
    draws.sort()
    mean = sum(sum(g) for g in groups) / len(questions)
    return mean, draws[int(0.025 * (boot - 1))], draws[int(0.975 * (boot - 1))]


def share(questions: Sequence[dict[str, Any]], o: Outcome, measure: str) -> float:
    return sum(hit(o[q["id"]], measure) for q in questions) / max(1, len(questions))


def moved(questions: Sequence[dict[str, Any]], a: Outcome, b: Outcome, measure: str
          ) -> tuple[list[str], list[str]]:
    """(questions a answers and b does not, those b answers and a does not)."""
    ids = [q["id"] for q in questions]
    return ([i for i in ids if hit(a[i], measure) and not hit(b[i], measure)],
            [i for i in ids if hit(b[i], measure) and not hit(a[i], measure)])


def _ids(ids: list[str]) -> str:
    return " ".join(ids) if ids else "-"


def ablation(passes: Passes, knobs: Sequence[Knob], tools: set[str], boot: int,
             rule: bool, with_all_off: bool = True) -> dict[str, Any]:
    eng, qs = passes.eng, passes.questions
    base = {w: passes.get("default", w, {}) for w in WHERE}
    rows: dict[str, Any] = {}
    for knob in knobs:
        only = cue_of(knob, eng, tools)
        for w in knob.where:
            on, off = (value_pass(passes, knob, v, w, base, only) for v in (knob.on, knob.off))
            asked = sum(1 for q in qs if only is None or only(q["q"]))
            note = "" if knob.read(eng.rt.cfg) == knob.on else " (not the default)"
            rows[f"{knob.name}|{w}"] = (knob.name, w, f"{knob.on}{note} -> {knob.off}", asked,
                                        on, off)
    for w in WHERE if with_all_off else ():
        rows[f"{ALL_OFF}|{w}"] = (ALL_OFF, w, "default -> today, part_penalty 0", len(qs),
                                  base[w], passes.get(ALL_OFF, w, all_off(eng)))
    out: dict[str, Any] = {"rows": []}
    for w in WHERE:
        print(f"\nAsked from {'no project' if w == 'none' else 'the question project'}: "
              f"default hit@5 {share(qs, base[w], 'hit@5'):.3f}, hit@10 "
              f"{share(qs, base[w], 'hit@10'):.3f}, agent view {share(qs, base[w], 'view'):.3f}"
              f"; each row: the knob at issue 31's value minus off (the others at their default), "
              "paired [95% CI]")
        print("| knob | on -> off | asked | hit@5 off | hit@5 delta | hit@10 delta | view off | "
              "view delta | h5+view | gained @5 | lost @5 | gained view | lost view |"
              + (" rule |" if rule else "") + "\n|" + "---|" * (13 + rule))
        for name, where, values, asked, on, off in (r for r in rows.values() if r[1] == w):
            d = {m: paired(qs, on, off, m, boot) for m in ("hit@5", "hit@10", "view")}
            g5, l5 = moved(qs, on, off, "hit@5")
            gv, lv = moved(qs, on, off, "view")
            both = d["hit@5"][0] + d["view"][0]
            cells = [name, values, str(asked), f"{share(qs, off, 'hit@5'):.3f}",
                     *(f"{m:+.3f} [{lo:+.2f}, {hi:+.2f}]" for m, lo, hi in
                       (d["hit@5"], d["hit@10"])),
                     f"{share(qs, off, 'view'):.3f}",
                     "{:+.3f} [{:+.2f}, {:+.2f}]".format(*d["view"]), f"{both:+.3f}",
                     _ids(g5), _ids(l5), _ids(gv), _ids(lv)]
            if rule:
                cells.append("-" if name == ALL_OFF else ("holds" if both >= 0 else "fails"))
            print("| " + " | ".join(cells) + " |")
            out["rows"].append({"knob": name, "where": where, "values": values, "asked": asked,
                                "delta": d, "h5+view": both, "gained@5": g5, "lost@5": l5,
                                "gained view": gv, "lost view": lv})
    if rule:
        print("\nRule (RECALL_LOG.md 2026-11-29, pre-registered): stays on only when hit@5 "
              "delta + view delta >= 0 from no project and from the project")
        verdict: dict[str, bool] = {}
        for r in out["rows"]:
            if r["knob"] != ALL_OFF:
                verdict[r["knob"]] = verdict.get(r["knob"], True) and r["h5+view"] >= 0
        for name, ok in verdict.items():
            print(f"- {name}: {'stays' if ok else 'goes back to its value before issue 31'}")
        out["verdict"] = verdict
    return out


def folds_of(questions: Sequence[dict[str, Any]], k: int) -> list[list[int]]:
    """Question indexes in ``k`` folds of whole sessions (largest session first into the
    fold with fewest questions; ties by session name)."""
    by_session: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        by_session[q["session"]].append(i)
    folds: list[list[int]] = [[] for _ in range(k)]
    for _, idx in sorted(by_session.items(), key=lambda s: (-len(s[1]), s[0])):
        min(folds, key=len).extend(idx)
    return folds


def cross_validate(passes: Passes, knobs: Sequence[Knob], tools: set[str], k: int
                   ) -> dict[str, Any]:
    eng, qs = passes.eng, passes.questions
    folds = folds_of(qs, k)
    base = {w: passes.get("default", w, {}) for w in WHERE}
    off_all = {w: passes.get(ALL_OFF, w, all_off(eng)) for w in WHERE}

    def score(got: dict[str, Outcome], idx: Sequence[int], where: Sequence[str]) -> float:
        return sum(hit(got[w][qs[i]["id"]], m) for w in where for i in idx
                   for m in ("hit@5", "view"))

    def figures(got: dict[str, Outcome]) -> str:
        return " / ".join(f"{share(qs, got[w], 'hit@5'):.3f}, {share(qs, got[w], 'view'):.3f}"
                          for w in WHERE)

    print(f"\nCross-validated ({k} folds by session, {', '.join(str(len(f)) for f in folds)} "
          "questions): each fold scored at the value chosen on the other folds (best hit@5 + "
          "view, from no project plus from the project). Cells: hit@5, view from no "
          "project / from the project")
    print(f"All knobs off: {figures(off_all)}; default: {figures(base)}")
    print("| knob | grid | chosen per fold | cross-validated | in-sample best | its figures | "
          "issue 31's value | off |\n|---|---|---|---|---|---|---|---|")
    out: dict[str, Any] = {}
    for knob in knobs:
        only = cue_of(knob, eng, tools)
        got: dict[Any, dict[str, Outcome]] = {}
        for v in knob.grid:
            got[v] = {w: value_pass(passes, knob, v, w, base, only) if w in knob.where
                      else base[w] for w in WHERE}
        chosen: list[Any] = []
        cv: dict[str, Outcome] = {w: {} for w in WHERE}
        for f, held in enumerate(folds):
            train = [i for g, fold in enumerate(folds) if g != f for i in fold]
            best = max(knob.grid, key=lambda v: (score(got[v], train, knob.where),
                                                 -knob.grid.index(v)))
            chosen.append(best)
            for w in WHERE:
                cv[w].update({qs[i]["id"]: got[best][w][qs[i]["id"]] for i in held})
        every = list(range(len(qs)))
        best_all = max(knob.grid, key=lambda v: (score(got[v], every, knob.where),
                                                 -knob.grid.index(v)))
        print(f"| {knob.name} | {', '.join(map(str, knob.grid))} | "
              f"{', '.join(map(str, chosen))} | {figures(cv)} | {best_all} | "
              f"{figures(got[best_all])} | {figures(got[knob.on])} | {figures(got[knob.off])} |")
        out[knob.name] = {"chosen": chosen, "in_sample_best": best_all,
                          "cv": {w: [share(qs, cv[w], m) for m in ("hit@5", "view")]
                                 for w in WHERE}}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=Path, default=rq.QUESTIONS)
    ap.add_argument("--split", choices=("dev",), default="dev",
                    help="dev only: the test split is read only by the lead's final figure")
    ap.add_argument("--store-cache", type=Path,
                    default=Path(tempfile.gettempdir()) / "ctx-bench")
    ap.add_argument("--knobs", default="", help="comma-separated substrings of knob names "
                    "(default: all)")
    ap.add_argument("--cv", type=int, default=0, metavar="K",
                    help="also cross-validate each knob's grid over K folds by session")
    ap.add_argument("--no-ablation", action="store_true", help="only the --cv table")
    ap.add_argument("--rule", action="store_true",
                    help="apply the pre-registered set-B rule to the ablation")
    ap.add_argument("--no-all-off", action="store_true",
                    help="leave out the row of every knob off together (two passes)")
    ap.add_argument("--boot", type=int, default=2000, help="bootstrap draws")
    ap.add_argument("--results", type=Path, help="keep (and reuse) the passes in this file")
    ap.add_argument("--json", type=Path, help="write the tables' figures to this file")
    args = ap.parse_args(argv)
    wanted = [s for s in args.knobs.split(",") if s]
    knobs = [k for k in KNOBS if not wanted or any(s in k.name for s in wanted)]
    if not args.questions.is_file():
        print(f"--questions: no file {args.questions}", file=sys.stderr)
        return 2
    try:
        bench = rq.open_bench(args.split, args.store_cache, args.questions)
        eng, questions, _ = bench.__enter__()
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 2
    out: dict[str, Any] = {"questions": args.questions.name}
    try:
        from engine.lab import learned

        tag = (f"{hashlib.sha256(args.questions.read_bytes()).hexdigest()[:10]}-"
               f"{args.split}-{code_hash()}")
        passes = Passes(eng, questions, args.results, tag)
        tools = stored_tools(eng)
        sessions = len({q["session"] for q in questions})
        print(f"Recall knobs of issue 31: {args.questions.name}, {args.split}, "
              f"{len(questions)} questions over {sessions} sessions; "
              f"{eng.rt.vault.chunk_count()} chunks; learned reader "
              f"{'fitted' if learned(eng.rt) is not None else 'NOT fitted'}; "
              f"load {os.getloadavg()[0]:.1f}")
        if not args.no_ablation:
            out["ablation"] = ablation(passes, knobs, tools, args.boot, args.rule,
                                       not args.no_all_off)
        if args.cv:
            out["cv"] = cross_validate(passes, knobs, tools, args.cv)
        print(f"\nload {os.getloadavg()[0]:.1f} (uptime 1-min average at the end)")
    finally:
        bench.__exit__(None, None, None)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
