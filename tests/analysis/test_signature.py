"""Hang signatures: stable across runs of the same hang, different for a different hang."""

from __future__ import annotations

import re
from collections.abc import Sequence

from reporter.analysis import Similarity, Verdict, analyze
from reporter.analysis.classify import default_classifier
from reporter.analysis.result import RankState, StackClass
from reporter.analysis.signature import MAX_FRAMES, make_signature
from reporter.model import Bundle, ProcessDump

from .builders import ALL_REDUCE, BROADCAST, bundle, dump, frames, scheduler_stack

RECV = "Scheduler.recv_requests (sglang/srt/managers/scheduler.py:1012)"
FORWARD = "Scheduler.forward_batch (sglang/srt/managers/scheduler.py:1400)"
GLOO = [
    "0x7f48900a3f16 (libc.so.6)",
    "pthread_cond_wait (libc.so.6)",
    "gloo::allreduce (libtorch_cpu.so)",
    "c10d::Work::wait (libtorch_cpu.so)",
]


def _shift_lines(specs: Sequence[str], by: int) -> list[str]:
    return [re.sub(r":(\d+)\)", lambda m: f":{int(m.group(1)) + by})", s) for s in specs]


def _desync(
    *,
    pid_base: int = 100,
    line_shift: int = 0,
    order: Sequence[int] = range(8),
    top: Sequence[str] = (),
    collective: Sequence[str] = ALL_REDUCE,
    swap: bool = False,
) -> Bundle:
    dumps: list[ProcessDump] = []
    for rank in order:
        first_half = (rank < 4) != swap
        main = (
            scheduler_stack(*BROADCAST, RECV)
            if first_half
            else scheduler_stack(*top, *collective, FORWARD)
        )
        dumps.append(
            dump(
                pid=pid_base + 7 * rank,
                title=f"sglang::scheduler_TP{rank}",
                main=_shift_lines(main, line_shift),
                threads={"watchdog": ["watchdog_thread (sglang/srt/managers/scheduler.py:77)"]},
            )
        )
    return bundle(*dumps)


def test_same_hang_other_pids_threads_lines_and_order() -> None:
    base = analyze(_desync())
    other = analyze(_desync(pid_base=40_000, line_shift=13, order=[5, 2, 7, 0, 1, 6, 3, 4]))
    assert base.verdict is Verdict.COLLECTIVE_DESYNC
    assert other.signature == base.signature
    assert re.fullmatch(r"[0-9a-f]{12}", base.signature.hash)


def test_ranks_are_not_part_of_the_signature() -> None:
    assert analyze(_desync(swap=True)).signature == analyze(_desync()).signature


def test_native_frames_do_not_change_the_signature() -> None:
    assert analyze(_desync(top=GLOO)).signature == analyze(_desync()).signature


def test_similarity_does_not_change_the_signature() -> None:
    # Lines differ inside the all_reduce half: exact similarity splits it, the text does not.
    dumps = list(_desync().dumps)
    dumps[5] = dump(
        pid=dumps[5].pid,
        title=dumps[5].cmdline,
        main=_shift_lines(scheduler_stack(*ALL_REDUCE, FORWARD), 3),
    )
    exact = analyze(bundle(*dumps), similarity=Similarity.EXACT)
    default = analyze(bundle(*dumps))
    assert len(exact.classes) > len(default.classes)
    assert exact.signature == default.signature


def test_different_collective_different_signature() -> None:
    barrier = ("barrier (torch/distributed/distributed_c10d.py:4100)",)
    base = analyze(_desync())
    other = analyze(_desync(collective=barrier))
    assert other.verdict is Verdict.COLLECTIVE_DESYNC
    assert other.signature.hash != base.signature.hash
    assert "barrier" in other.signature.text


def test_text_is_readable_and_drops_generic_frames() -> None:
    text = analyze(_desync()).signature.text
    # Each line starts where the classes part (the shared frame of the branch point).
    assert text.splitlines() == [
        "collective-desync",
        "all_reduce: event_loop_overlap_disagg_decode (decode.py)"
        " > forward_batch (scheduler.py) > all_reduce (distributed_c10d.py)",
        "broadcast: event_loop_overlap_disagg_decode (decode.py)"
        " > recv_requests (scheduler.py) > broadcast_pyobj (utils.py) > broadcast (distributed_c10d.py)",
    ]
    assert (
        "wrapper" not in text
        and "spawn_main" not in text
        and "run_scheduler_process" not in text
        and ":" not in text.split("\n")[1].split(": ", 1)[1]
    )


def test_at_most_six_frames_per_class() -> None:
    deep = [f"f{i} (app/deep.py:{i})" for i in range(20)]
    stack = StackClass(
        ranks=(0,),
        collective=None,
        wait=None,
        state=RankState.STUCK,
        frames=frames(deep),
        pids=(1,),
    )
    signature = make_signature(Verdict.ALL_STUCK, [stack], default_classifier())
    line = signature.text.splitlines()[1]
    assert line == "running: " + " > ".join(f"f{i} (deep.py)" for i in reversed(range(MAX_FRAMES)))


def test_bundles_without_stacks_get_signatures_from_their_evidence() -> None:
    from reporter.analysis.signature import evidence_lines

    classifier = default_classifier()
    gone = evidence_lines(
        failures=[("gone", "scheduler", "No such file or directory (os error 2)")]
    )
    wedge = evidence_lines(wedge_signals=["sglang:gen_throughput"])
    diff = evidence_lines(top_change="env NCCL_ALGO: Ring -> Tree")
    sigs = {
        make_signature(Verdict.INCONCLUSIVE, (), classifier, lines).hash
        for lines in (gone, wedge, diff, evidence_lines(kinds=["log"]))
    }
    assert len(sigs) == 4
    # PIDs in reasons do not change it.
    a = evidence_lines(failures=[("gone", "", "All pyspy dump attempts failed for PID 8251")])
    b = evidence_lines(failures=[("gone", "", "All pyspy dump attempts failed for PID 12")])
    assert make_signature(Verdict.INCONCLUSIVE, (), classifier, a) == make_signature(
        Verdict.INCONCLUSIVE, (), classifier, b
    )


# How a rank process starts, outermost frames last (innermost first like every stack here).
LAUNCHERS = {
    "mp.spawn": [
        "spawn_worker (job.py:150)",
        "_wrap (torch/multiprocessing/spawn.py:87)",
        "BaseProcess.run (multiprocessing/process.py:108)",
        "BaseProcess._bootstrap (multiprocessing/process.py:314)",
        "_main (multiprocessing/spawn.py:135)",
        "spawn_main (multiprocessing/spawn.py:122)",
        "<module> (<string>:1)",
    ],
    "plain": ["main (job.py:165)", "<module> (job.py:224)"],
    "torchrun": [
        "main (job.py:165)",
        "wrapper (torch/distributed/elastic/multiprocessing/errors/__init__.py:355)",
        "<module> (job.py:224)",
    ],
    "python -m": [
        "main (job.py:165)",
        "<module> (job.py:224)",
        "_run_code (runpy.py:86)",
        "_run_module_as_main (runpy.py:196)",
    ],
}
BODY_WAIT = [
    "all_reduce (torch/distributed/distributed_c10d.py:3252)",
    "writing_check (job.py:99)",
    "on_idle (job.py:121)",
    "run_rank (job.py:155)",
]
BODY_IDLE = ["self_check_during_idle (job.py:140)", "on_idle (job.py:121)", "run_rank (job.py:155)"]


def _launched(launcher: str, stacks: Sequence[Sequence[str]], snapshots: int = 2) -> Bundle:
    return bundle(
        *(
            dump(pid=500 + rank, main=[*stack, *LAUNCHERS[launcher]], source=f"s{k}/rank{rank}.txt")
            for k in range(snapshots)
            for rank, stack in enumerate(stacks)
        )
    )


def test_the_launcher_never_enters_the_signature() -> None:
    shapes = {
        "desync": [BODY_WAIT, BODY_WAIT, BODY_IDLE, BODY_IDLE],
        "all stuck in one place": [BODY_WAIT] * 4,
    }
    for name, stacks in shapes.items():
        signatures = {
            launcher: analyze(_launched(launcher, stacks)).signature for launcher in LAUNCHERS
        }
        assert len(set(signatures.values())) == 1, (name, signatures)
        text = next(iter(signatures.values())).text
        for word in ("<module>", "_wrap", "spawn_main", "runpy", "main (job.py)", "spawn_worker"):
            assert word not in text, (name, word, text)
        assert "run_rank" in text or "on_idle" in text


def test_a_collective_called_from_the_entry_is_signed_by_the_collective() -> None:
    # A script calling the collective straight from main(), or from the mp.spawn target:
    # the entry function is named by the launcher, so only the collective is left.
    stack = ["all_reduce (torch/distributed/distributed_c10d.py:3252)"]
    texts = {analyze(_launched(name, [stack, stack])).signature.text for name in LAUNCHERS}
    assert texts == {"all-stuck\nall_reduce: all_reduce (distributed_c10d.py)"}


def test_a_moving_class_is_written_from_its_call_site() -> None:
    # Where a snapshot caught a moving rank inside its loop body is chance.
    forward = "forward_decode (job.py:115)"
    caught = {
        "in all_reduce": ["all_reduce (torch/distributed/distributed_c10d.py:3252)", forward],
        "in the matmul": [forward],
    }
    texts = set()
    for top in caught.values():
        dumps = []
        for k in range(2):
            dumps.append(dump(pid=1, main=[*BODY_WAIT, *LAUNCHERS["plain"]], source=f"s{k}/a.txt"))
            mover = [*top, f"run_batch (job.py:{107 + k})", "run_rank (job.py:155)"]
            dumps.append(dump(pid=2, main=[*mover, *LAUNCHERS["plain"]], source=f"s{k}/b.txt"))
        analysis = analyze(bundle(*dumps))
        assert analysis.verdict is Verdict.COLLECTIVE_DESYNC
        texts.add(analysis.signature.text)
    assert len(texts) == 1
    assert "moving: run_rank (job.py) > run_batch (job.py) > forward_decode (job.py)" in texts.pop()


IDLE_POLL = ["poll (runtime.py:40)", "recv_requests (job.py:92)", "event_loop (job.py:84)"]
IDLE_SLEEP = [
    "self_check_during_idle (job.py:127)",
    "on_idle (job.py:119)",
    "event_loop (job.py:90)",
]
STUCK = [
    "all_reduce (torch/distributed/distributed_c10d.py:3252)",
    "writing_check (job.py:66)",
    "check_hicache_events (job.py:123)",
    "on_idle (job.py:118)",
    "event_loop (job.py:90)",
]


def _tp_desync(idle: Sequence[Sequence[str]], stuck: Sequence[str] = STUCK) -> Bundle:
    """Ranks 0-1 in `stuck`, ranks 2-3 idle where each snapshot caught them (`idle[k]`)."""
    dumps = []
    for k, caught in enumerate(idle):
        for rank in range(4):
            body = stuck if rank < 2 else caught
            dumps.append(
                dump(
                    pid=700 + rank, main=[*body, *LAUNCHERS["mp.spawn"]], source=f"s{k}/r{rank}.txt"
                )
            )
    return bundle(*dumps)


def test_the_same_hang_caught_anywhere_in_the_idle_loop_has_one_signature() -> None:
    # The real tp_desync hang: ranks 2-3 idle in the same loop, a snapshot catches them in
    # recv_requests or in self_check_during_idle; the branch point with the stuck ranks
    # moves with it (event_loop or on_idle), the signature must not.
    catches = {
        "both asleep": [IDLE_SLEEP, IDLE_SLEEP, IDLE_SLEEP],
        "both polling": [IDLE_POLL, IDLE_POLL, IDLE_POLL],
        "mixed": [IDLE_POLL, IDLE_SLEEP, IDLE_POLL],
    }
    signatures = {name: analyze(_tp_desync(idle)).signature for name, idle in catches.items()}
    assert {a.verdict for a in (analyze(_tp_desync(i)) for i in catches.values())} == {
        Verdict.COLLECTIVE_DESYNC
    }
    assert len({s.hash for s in signatures.values()}) == 1, signatures
    text = signatures["mixed"].text
    assert "recv_requests" not in text and "self_check_during_idle" not in text
    # The stuck side keeps its exact stack, from the loop down to the collective.
    assert (
        "all_reduce: event_loop (job.py) > on_idle (job.py) > check_hicache_events (job.py) "
        "> writing_check (job.py) > all_reduce (distributed_c10d.py)"
    ) in text


def test_another_stuck_place_is_another_signature_whatever_the_idle_side() -> None:
    other = [
        "all_reduce (torch/distributed/distributed_c10d.py:3252)",
        "loading_check (job.py:70)",
        "check_hicache_events (job.py:124)",
        "on_idle (job.py:118)",
        "event_loop (job.py:90)",
    ]
    idle = [IDLE_SLEEP, IDLE_POLL, IDLE_SLEEP]
    assert analyze(_tp_desync(idle)).signature != analyze(_tp_desync(idle, other)).signature
    # And an idle side in another loop is another hang.
    elsewhere = [["sleep_a_bit (job.py:12)", "housekeeping_loop (job.py:10)"]] * 3
    assert analyze(_tp_desync(idle)).signature != analyze(_tp_desync(elsewhere)).signature
