"""Frame and stack classification from reporter/data/frames.toml."""

from __future__ import annotations

import re

import pytest

from reporter.analysis.classify import (
    Classifier,
    FrameKind,
    RuleSection,
    default_classifier,
    is_native,
    load_rules,
    parse_rules,
)
from reporter.core.errors import ReporterError

from .builders import frame, frames

C, W, G = FrameKind.COLLECTIVE, FrameKind.WAIT, FrameKind.GENERIC

# (frame spec, kind, collective / wait name, rule id). Every rule appears at least once.
FRAME_CASES: list[tuple[str, FrameKind, str | None, str]] = [
    (
        "all_reduce (torch/distributed/distributed_c10d.py:2501)",
        C,
        "all_reduce",
        "torch-reduce-family",
    ),
    (
        "reduce_scatter_tensor (torch/distributed/distributed_c10d.py:4000)",
        C,
        "reduce_scatter_tensor",
        "torch-reduce-family",
    ),
    ("reduce (torch/distributed/distributed_c10d.py:2700)", C, "reduce", "torch-reduce-family"),
    (
        "GroupCoordinator.all_reduce (sglang/srt/distributed/parallel_state.py:480)",
        C,
        "all_reduce",
        "torch-reduce-family",
    ),
    (
        "all_gather (torch/distributed/distributed_c10d.py:3000)",
        C,
        "all_gather",
        "torch-gather-family",
    ),
    (
        "all_gather_into_tensor (torch/distributed/distributed_c10d.py:3100)",
        C,
        "all_gather_into_tensor",
        "torch-gather-family",
    ),
    ("gather (torch/distributed/distributed_c10d.py:3300)", C, "gather", "torch-gather-family"),
    ("scatter (torch/distributed/distributed_c10d.py:3400)", C, "scatter", "torch-gather-family"),
    (
        "all_to_all_single (torch/distributed/distributed_c10d.py:3900)",
        C,
        "all_to_all_single",
        "torch-gather-family",
    ),
    ("broadcast (torch/distributed/distributed_c10d.py:2401)", C, "broadcast", "torch-broadcast"),
    (
        "broadcast_object_list (torch/distributed/distributed_c10d.py:3200)",
        C,
        "broadcast_object_list",
        "torch-object-collectives",
    ),
    (
        "all_gather_object (torch/distributed/distributed_c10d.py:2900)",
        C,
        "all_gather_object",
        "torch-object-collectives",
    ),
    (
        "recv_object_list (torch/distributed/distributed_c10d.py:3300)",
        C,
        "recv_object_list",
        "torch-object-collectives",
    ),
    (
        "GroupCoordinator.recv_object (vllm/distributed/parallel_state.py:600)",
        C,
        "recv",
        "group-coordinator-recv",
    ),
    # py-spy shortens SGLang's path to `distributed/parallel_state.py` (a real dump, #17941).
    (
        "recv_tensor_dict (distributed/parallel_state.py:1228)",
        C,
        "recv",
        "group-coordinator-recv",
    ),
    (
        "GroupCoordinator.send_tensor_dict (sglang/srt/distributed/parallel_state.py:1180)",
        C,
        "send",
        "group-coordinator-send",
    ),
    ("barrier (torch/distributed/distributed_c10d.py:4100)", C, "barrier", "torch-barrier"),
    (
        "monitored_barrier (torch/distributed/distributed_c10d.py:4200)",
        C,
        "monitored_barrier",
        "torch-barrier",
    ),
    ("send (torch/distributed/distributed_c10d.py:2200)", C, "send", "torch-p2p"),
    ("recv (torch/distributed/distributed_c10d.py:2250)", C, "recv", "torch-p2p"),
    (
        "batch_isend_irecv (torch/distributed/distributed_c10d.py:2300)",
        C,
        "batch_isend_irecv",
        "torch-p2p",
    ),
    (
        "_all_gather_base (torch/distributed/distributed_c10d.py:3150)",
        C,
        "all_gather_into_tensor",
        "torch-all-gather-base",
    ),
    (
        "_reduce_scatter_base (torch/distributed/distributed_c10d.py:4050)",
        C,
        "reduce_scatter_tensor",
        "torch-reduce-scatter-base",
    ),
    (
        "_sync_module_states (torch/distributed/utils.py:300)",
        C,
        "broadcast",
        "torch-broadcast-coalesced",
    ),
    (
        "GroupCoordinator.broadcast_tensor_dict (vllm/distributed/parallel_state.py:700)",
        C,
        "broadcast",
        "distributed-tensor-dict",
    ),
    (
        "tensor_model_parallel_all_reduce (sglang/srt/distributed/communication_op.py:12)",
        C,
        "all_reduce",
        "model-parallel-all-reduce",
    ),
    (
        "tensor_model_parallel_all_gather (vllm/distributed/communication_op.py:18)",
        C,
        "all_gather",
        "model-parallel-all-gather",
    ),
    ("broadcast_pyobj (sglang/srt/utils.py:1100)", C, "broadcast", "sglang-broadcast-pyobj"),
    (
        "poll_and_all_reduce (sglang/srt/disaggregation/utils.py:40)",
        C,
        "all_reduce",
        "sglang-poll-and-all-reduce",
    ),
    (
        "MessageQueue.dequeue (vllm/distributed/device_communicators/shm_broadcast.py:480)",
        W,
        "shm-dequeue",
        "shm-message-queue",
    ),
    (
        "MessageQueue.acquire_read (vllm/distributed/device_communicators/shm_broadcast.py:420)",
        W,
        "shm-dequeue",
        "shm-message-queue",
    ),
    (
        "MessageQueue.acquire_read (myapp/shm_queue.py:10)",
        W,
        "shm-dequeue",
        "shm-message-queue-qualname",
    ),
    ("gloo::allreduce (libtorch_cpu.so)", C, "all_reduce", "native-all-reduce"),
    ("ncclAllReduce (libnccl.so.2)", C, "all_reduce", "native-all-reduce"),
    ("c10d::ProcessGroupNCCL::allreduce (libtorch_cuda.so)", C, "all_reduce", "native-all-reduce"),
    ("gloo::broadcast (libtorch_cpu.so)", C, "broadcast", "native-broadcast"),
    ("ncclAllGather (libnccl.so.2)", C, "all_gather", "native-all-gather"),
    ("ncclReduceScatter (libnccl.so.2)", C, "reduce_scatter", "native-reduce-scatter"),
    ("gloo::barrier (libtorch_cpu.so)", C, "barrier", "native-barrier"),
    ("ncclReduce (libnccl.so.2)", C, "ncclReduce", "native-other-collectives"),
    ("ncclSend (libnccl.so.2)", C, "send", "native-send"),
    ("ncclRecv (libnccl.so.2)", C, "recv", "native-recv"),
    # gloo's transport serves every collective: only the p2p work types say recv / send.
    (
        "gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)",
        C,
        "gloo",
        "native-gloo-transport",
    ),
    ("c10d::ProcessGroupGloo::RecvWork::wait (libtorch_cpu.so)", C, "recv", "native-recv"),
    ("c10d::ProcessGroupGloo::SendWork::wait (libtorch_cpu.so)", C, "send", "native-send"),
    (
        "gloo::transport::tcp::Pair::handleRemotePendingSend (libtorch_cpu.so)",
        C,
        "gloo",
        "native-gloo-transport",
    ),
    ("c10d::ProcessGroupGloo::runLoop (libtorch_cpu.so)", C, "gloo", "native-gloo-transport"),
    ("ncclCommInitRank (libnccl.so.2)", C, "nccl", "native-nccl"),
    ("c10d::ProcessGroupNCCL::WorkNCCL::synchronize (libtorch_cuda.so)", C, "nccl", "native-nccl"),
    ("c10d::Work::wait (libtorch_cpu.so)", C, "work-wait", "native-work-wait"),
    ("Poller.poll (zmq/sugar/poll.py:106)", W, "zmq-poll", "zmq-poll"),
    ("Socket.recv_pyobj (zmq/sugar/socket.py:1000)", W, "zmq-recv", "zmq-recv"),
    ("zmq_poll (libzmq.so.5)", W, "zmq-poll", "zmq-native"),
    ("Queue.get (queue.py:171)", W, "queue-get", "queue-get"),
    ("_shutdown (threading.py:1622)", W, "exiting", "interpreter-exit"),
    # MessageQueue.recv lives under vllm/distributed/ but is no torch p2p recv (not_file).
    (
        "recv (vllm/distributed/device_communicators/shm_broadcast.py:802)",
        W,
        "shm-dequeue",
        "shm-message-queue",
    ),
    ("recv (vllm/distributed/parallel_state.py:900)", C, "recv", "group-coordinator-recv"),
    ("irecv (torch/distributed/distributed_c10d.py:2250)", C, "irecv", "torch-p2p"),
    ("Queue.get (multiprocessing/queues.py:103)", W, "queue-get", "queue-get"),
    ("Event.wait (threading.py:629)", W, "event-wait", "event-wait"),
    ("Condition.wait (threading.py:327)", W, "condition-wait", "condition-wait"),
    ("wait (threading.py:327)", W, "condition-wait", "condition-wait"),
    (
        "std::condition_variable::wait (libstdc++.so.6.0.30)",
        W,
        "condition-wait",
        "native-condition-wait",
    ),
    ("pthread_cond_timedwait (libc.so.6)", W, "condition-wait", "native-condition-wait"),
    ("Semaphore.acquire (threading.py:475)", W, "lock-acquire", "lock-acquire"),
    ("lock_PyThread_acquire_lock (libpython3.11.so.1.0)", W, "lock-acquire", "native-lock"),
    ("PyThread_acquire_lock_timed (libpython3.11.so.1.0)", W, "lock-acquire", "native-lock"),
    ("EpollSelector.select (selectors.py:468)", W, "select", "select"),
    ("epoll_wait (libc.so.6)", W, "select", "native-select"),
    ("time_sleep (libpython3.11.so.1.0)", W, "sleep", "native-sleep"),
    ("clock_nanosleep (libc.so.6)", W, "sleep", "native-sleep"),
    ("sleep (asyncio/tasks.py:639)", W, "sleep", "asyncio-sleep"),
    ("SocketIO.readinto (socket.py:706)", W, "socket-recv", "socket-recv"),
    ("sock_recv (socketmodule.c:3567)", W, "socket-recv", "native-socket-recv"),
    ("recv (libc.so.6)", W, "socket-recv", "native-socket-recv"),
    ("Connection._recv_bytes (multiprocessing/connection.py:430)", W, "pipe-recv", "pipe-recv"),
    ("Future.result (concurrent/futures/_base.py:451)", W, "future-result", "future-result"),
    ("Thread.join (threading.py:1112)", W, "thread-join", "thread-join"),
    ("Thread._wait_for_tstate_lock (threading.py:1132)", W, "thread-join", "thread-join"),
    ("Popen.wait (subprocess.py:1264)", W, "process-wait", "process-wait"),
    ("synchronize (torch/cuda/__init__.py:800)", W, "cuda-sync", "cuda-sync"),
    ("cudaStreamSynchronize (libcudart.so.12)", W, "cuda-sync", "native-cuda-sync"),
    ("Thread._bootstrap_inner (threading.py:1045)", G, "_bootstrap_inner", "threading-bootstrap"),
    ("Thread.run (threading.py:982)", G, "run", "threading-bootstrap"),
    (
        "BaseProcess._bootstrap (multiprocessing/process.py:314)",
        G,
        "_bootstrap",
        "multiprocessing-bootstrap",
    ),
    ("Popen._launch (multiprocessing/popen_fork.py:71)", G, "_launch", "multiprocessing-bootstrap"),
    ("spawn_main (multiprocessing/spawn.py:122)", G, "spawn_main", "multiprocessing-spawn"),
    ("_main (multiprocessing/spawn.py:135)", G, "_main", "multiprocessing-spawn"),
    ("<module> (<string>:1)", G, "<module>", "module-string"),
    ("_run_module_as_main (runpy.py:198)", G, "_run_module_as_main", "runpy"),
    ("Module._call_impl (torch/nn/modules/module.py:1527)", G, "_call_impl", "torch-module-call"),
    (
        "Module._wrapped_call_impl (torch/nn/modules/module.py:1518)",
        G,
        "_wrapped_call_impl",
        "torch-module-call",
    ),
    (
        "_exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)",
        G,
        "wrapper",
        "c10d-logger-wrapper",
    ),
    ("wrapper (functools.py:909)", G, "wrapper", "functools-wrappers"),
    ("ContextDecorator.inner (contextlib.py:81)", G, "inner", "contextlib-wrappers"),
    (
        "decorate_context (torch/utils/_contextlib.py:116)",
        G,
        "decorate_context",
        "torch-decorators",
    ),
    ("0x7f4a8b44524a (libc.so.6)", G, "0x7f4a8b44524a", "native-address"),
    ("thread_run (libpython3.11.so.1.0)", G, "thread_run", "native-runtime"),
    (
        "pybind11::cpp_function::dispatcher (libtorch_python.so)",
        G,
        "pybind11::cpp_function::dispatcher",
        "native-runtime",
    ),
]

# (thread frames innermost first, idle label or None, rule id)
IDLE_CASES: list[tuple[list[str], str | None, str | None]] = [
    (
        [
            "Condition.wait (threading.py:331)",
            "Event.wait (threading.py:629)",
            "TMonitor.run (tqdm/_monitor.py:60)",
            "Thread._bootstrap_inner (threading.py:1045)",
        ],
        "tqdm monitor",
        "tqdm-monitor",
    ),
    (
        ["watchdog_thread (sglang/srt/managers/scheduler.py:77)", "Thread.run (threading.py:982)"],
        "watchdog",
        "watchdog",
    ),
    (
        [
            "Condition.wait (threading.py:327)",
            "Queue._feed (multiprocessing/queues.py:231)",
            "Thread.run (threading.py:982)",
        ],
        "multiprocessing queue feeder",
        "mp-queue-feeder",
    ),
    (
        ["Pool._handle_workers (multiprocessing/pool.py:522)", "Thread.run (threading.py:982)"],
        "multiprocessing pool handler",
        "mp-pool-handlers",
    ),
    (
        ["_worker (concurrent/futures/thread.py:81)", "Thread.run (threading.py:982)"],
        "idle ThreadPoolExecutor worker",
        "futures-thread-worker",
    ),
    (
        [
            "_ExecutorManagerThread.run (concurrent/futures/process.py:335)",
            "Thread._bootstrap_inner (threading.py:1045)",
        ],
        "ProcessPoolExecutor manager",
        "futures-process-manager",
    ),
    (
        [
            "SubprocPool._read_thread (torch/_inductor/compile_worker/subproc_pool.py:200)",
            "Thread.run (threading.py:982)",
        ],
        "inductor compile worker",
        "inductor-compile-worker",
    ),
    (
        [
            "Queue.get (queue.py:180)",
            "_pin_memory_loop (torch/utils/data/_utils/pin_memory.py:53)",
            "Thread.run (threading.py:982)",
        ],
        "pin-memory thread",
        "pin-memory",
    ),
    (
        [
            "EpollSelector.select (selectors.py:468)",
            "BaseEventLoop._run_once (asyncio/base_events.py:1884)",
            "BaseEventLoop.run_forever (asyncio/base_events.py:607)",
        ],
        "asyncio event loop",
        "asyncio-loop",
    ),
    (
        [
            "GarbageCollector.run (zmq/utils/garbage.py:50)",
            "Thread._bootstrap_inner (threading.py:1045)",
        ],
        "zmq background thread",
        "zmq-background",
    ),
    # A pool worker running a task is not idle: its innermost Python frame is the task.
    (
        [
            "compute (myapp/tasks.py:10)",
            "_WorkItem.run (concurrent/futures/thread.py:58)",
            "_worker (concurrent/futures/thread.py:83)",
        ],
        None,
        None,
    ),
    (["busy_worker (myapp/workers.py:7)", "Thread.run (threading.py:982)"], None, None),
]


@pytest.fixture(scope="module")
def classifier() -> Classifier:
    return default_classifier()


@pytest.mark.parametrize(("spec", "kind", "name", "rule"), FRAME_CASES)
def test_frame_rule(
    classifier: Classifier, spec: str, kind: FrameKind, name: str | None, rule: str
) -> None:
    got = classifier.classify(frame(spec))
    assert (got.kind, got.name, got.rule) == (kind, name, rule)


@pytest.mark.parametrize(("specs", "label", "rule"), IDLE_CASES)
def test_idle_rule(
    classifier: Classifier, specs: list[str], label: str | None, rule: str | None
) -> None:
    idle = classifier.describe(frames(specs)).idle
    assert (idle.label if idle else None, idle.rule if idle else None) == (label, rule)


# (frame spec, [[bootstrap]] rule id or None): how a process was started, for signatures.
BOOTSTRAP_CASES: list[tuple[str, str | None]] = [
    ("<module> (train.py:40)", "module-level"),
    ("<module> (<string>:1)", "module-level"),
    ("_run_module_as_main (runpy.py:198)", "runpy-entry"),
    ("spawn_main (multiprocessing/spawn.py:122)", "multiprocessing-entry"),
    ("BaseProcess._bootstrap (multiprocessing/process.py:314)", "multiprocessing-entry"),
    ("Thread._bootstrap_inner (threading.py:1045)", "thread-entry"),
    ("_wrap (torch/multiprocessing/spawn.py:87)", "torch-mp-spawn"),
    (
        "wrapper (torch/distributed/elastic/multiprocessing/errors/__init__.py:355)",
        "torchrun-agent",
    ),
    ("main (torch/distributed/run.py:919)", "torchrun-agent"),
    ("main (train.py:12)", None),
    ("Thread.run (mythreading.py:10)", None),
]


@pytest.mark.parametrize(("spec", "rule"), BOOTSTRAP_CASES)
def test_bootstrap_rule(classifier: Classifier, spec: str, rule: str | None) -> None:
    assert classifier.bootstrap_rule(frame(spec)) == rule


def test_p2p_directions_come_from_the_p2p_table(classifier: Classifier) -> None:
    rules = classifier.rules
    assert rules.p2p_direction("recv") == "recv"
    assert rules.p2p_direction("isend") == "send"
    assert rules.p2p_direction("batch_isend_irecv") == "either"
    assert rules.p2p_direction("all_reduce") is None
    assert rules.p2p_direction(None) is None
    with pytest.raises(ReporterError, match="listed twice"):
        parse_rules('[p2p]\nrecv = ["recv"]\nsend = ["recv"]\n')


def test_every_rule_is_exercised() -> None:
    rules = load_rules()
    exercised = (
        {case[3] for case in FRAME_CASES}
        | {case[2] for case in IDLE_CASES if case[2]}
        | {str(case[2]) for case in IDLE_LOOP_CASES if case[2]}
        | {case[1] for case in BOOTSTRAP_CASES if case[1]}
    )
    assert {r.id for r in rules.rules} == exercised


def test_every_section_has_rules() -> None:
    rules = load_rules()
    assert all(rules.section(section) for section in RuleSection)
    assert rules.library is not None


@pytest.mark.parametrize(
    ("spec", "kind"),
    [
        ("check_hicache_events (sglang/srt/managers/scheduler.py:900)", FrameKind.APPLICATION),
        ("_object_to_tensor (torch/distributed/distributed_c10d.py:2300)", FrameKind.LIBRARY),
        ("Thread.start (threading.py:964)", FrameKind.LIBRARY),
        ("frobnicate (libfoo.so)", FrameKind.NATIVE),
        # A file glob is anchored at a path part: "mythreading.py" is not threading.py.
        ("Condition.wait (app/mythreading.py:10)", FrameKind.APPLICATION),
        ("Condition.wait (/usr/lib/python3.11/threading.py:327)", FrameKind.WAIT),
    ],
)
def test_other_frame_kinds(classifier: Classifier, spec: str, kind: FrameKind) -> None:
    assert classifier.classify(frame(spec)).kind is kind


def test_bare_co_name_matches_like_qualname(classifier: Classifier) -> None:
    # py-spy <= 0.4.2 prints `recv_requests`, 0.4.3 `Scheduler.recv_requests`.
    old = classifier.classify(
        frame("dequeue (vllm/distributed/device_communicators/shm_broadcast.py:480)")
    )
    assert old.name == "shm-dequeue"


def test_is_native() -> None:
    assert is_native(frame("gloo::allreduce (libtorch_cpu.so)"))
    assert is_native(frame("sock_recv (socketmodule.c:3567)"))
    assert not is_native(frame("all_reduce (torch/distributed/distributed_c10d.py:1)"))


GLOO_ALL_REDUCE = [
    "0x7f48900a3f16 (libc.so.6)",
    "pthread_cond_wait (libc.so.6)",
    "std::condition_variable::wait (libstdc++.so.6.0.30)",
    "gloo::transport::tcp::UnboundBuffer::waitRecv (libtorch_cpu.so)",
    "gloo::allreduce (libtorch_cpu.so)",
    "c10d::Work::wait (libtorch_cpu.so)",
    "pybind11::cpp_function::dispatcher (libtorch_python.so)",
    "all_reduce (torch/distributed/distributed_c10d.py:3252)",
    "_exception_logger.<locals>.wrapper (torch/distributed/c10d_logger.py:83)",
    "check_hicache_events (sglang/srt/managers/scheduler.py:900)",
    "event_loop_overlap (sglang/srt/managers/scheduler.py:700)",
]


@pytest.mark.parametrize(
    ("specs", "collective", "wait"),
    [
        (GLOO_ALL_REDUCE, "all_reduce", None),
        # Only transport-level frames: the unspecific name stands in.
        (GLOO_ALL_REDUCE[:4] + GLOO_ALL_REDUCE[9:], "gloo", None),
        # The outermost collective of the segment names it: the user called broadcast_object_list.
        (
            [
                "broadcast (torch/distributed/distributed_c10d.py:2401)",
                "wrapper (torch/distributed/c10d_logger.py:83)",
                "_object_to_tensor (torch/distributed/distributed_c10d.py:2300)",
                "broadcast_object_list (torch/distributed/distributed_c10d.py:3200)",
                "sync (myapp/train.py:10)",
            ],
            "broadcast_object_list",
            None,
        ),
        (
            [
                "Condition.wait (threading.py:327)",
                "Event.wait (threading.py:629)",
                "waiter (myapp/workers.py:14)",
            ],
            None,
            "event-wait",
        ),
        (
            [
                "Condition.wait (threading.py:327)",
                "Future.result (concurrent/futures/_base.py:451)",
                "submit_and_wait (myapp/workers.py:14)",
            ],
            None,
            "future-result",
        ),
        # A collective below the first application frame is not where this stack waits.
        (
            [
                "compute (myapp/model.py:5)",
                "all_reduce (torch/distributed/distributed_c10d.py:1)",
                "step (myapp/train.py:9)",
            ],
            None,
            None,
        ),
        (["busy (myapp/x.py:1)"], None, None),
        ([], None, None),
    ],
)
def test_describe_stack(
    classifier: Classifier, specs: list[str], collective: str | None, wait: str | None
) -> None:
    facts = classifier.describe(frames(specs))
    assert (facts.collective, facts.wait) == (collective, wait)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[collective]]\nfunction = ['x']\n", "#1 needs `id`"),
        ("[[collective]]\nid = 'a'\n", "needs `function` or `qualname`"),
        ("[[wait]]\nid = 'a'\nfunction = ['x']\n", "needs a `name`"),
        ("[[generic]]\nid = 'a'\nfunction = 'x'\n", "function` must be a list of strings"),
        (
            "[[generic]]\nid = 'a'\nfunction = ['x']\n[[generic]]\nid = 'a'\nfunction = ['y']\n",
            "duplicate id",
        ),
        (
            "[[generic]]\nid = 'a'\nfunction = ['x']\nnative = 'yes'\n",
            "native` must be true or false",
        ),
        ("not toml [", "not valid TOML"),
    ],
)
def test_parse_rules_rejects(text: str, message: str) -> None:
    with pytest.raises(ReporterError, match=re.escape(message)):
        parse_rules(text, source="t.toml")


IDLE_LOOP_CASES = [
    (
        [
            "Scheduler.self_check_during_idle (tp_desync.py:131)",
            "Scheduler.on_idle (tp_desync.py:122)",
            "Scheduler.event_loop_overlap (tp_desync.py:89)",
        ],
        "self_check_during_idle",
        "idle-handlers",
    ),
    (
        [
            "PullSocket.poll (simserve/runtime.py:112)",
            "Scheduler.recv_requests (tp_desync.py:95)",
            "Scheduler.event_loop_overlap (tp_desync.py:84)",
        ],
        "recv_requests",
        "request-polling",
    ),
    (["forward_batch (myapp/model.py:10)", "event_loop (myapp/serve.py:3)"], None, None),
]


@pytest.mark.parametrize(("specs", "function", "rule"), IDLE_LOOP_CASES)
def test_idle_loop_rule(
    classifier: Classifier, specs: list[str], function: str | None, rule: str | None
) -> None:
    facts = classifier.describe(frames(specs))
    loop = facts.idle_loop
    assert (loop.short_function if loop else None) == function
    if rule is not None:
        assert loop is not None
        matched = [
            r.id
            for r in load_rules().section(RuleSection.IDLE_LOOP)
            if r.matches(loop.short_function, loop.function, loop.file, False)
        ]
        assert matched[0] == rule


def test_call_site_is_the_innermost_application_frame(classifier: Classifier) -> None:
    facts = classifier.describe(
        frames(
            [
                "all_reduce (torch/distributed/distributed_c10d.py:2501)",
                "wrapper (torch/distributed/c10d_logger.py:81)",
                "HiRadixCache.writing_check (tp_desync.py:60)",
                "Scheduler.check_hicache_events (tp_desync.py:126)",
            ]
        )
    )
    assert facts.collective == "all_reduce"
    assert facts.site_text == "writing_check (tp_desync.py:60)"


def test_idle_waits_come_from_the_states_table(classifier: Classifier) -> None:
    facts = classifier.describe(frames(["Socket.poll (zmq/sugar/socket.py:10)", "loop (app.py:1)"]))
    assert facts.wait == "zmq-poll" and facts.idle_wait
    facts = classifier.describe(frames(["Work.wait (myapp/work.py:1)"]))
    assert not facts.idle_wait
