"""Waits between processes on one host, as edges of the wait-for graph (`waitgraph.py`).

Producers (registered in this order):

- `child-process`: a parent in `waitpid` (`Popen.wait`, `subprocess.run`, `Process.join`,
  the kernel's `do_wait`) waits for its child; the child is named from the parent's
  `proc/*.family` children (zombies included) or the children's PPid, and its state is
  its own latest evidence (running, blocked, zombie, gone);
- `pipes`: a thread blocked writing a full pipe (`pipe_write`) waits for the processes
  holding the read end of that `pipe:[inode]`, one reading it waits for the writers; a
  thread blocked reading a socket waits for the peer of its connection (another captured
  process, or a remote `host:port` from the socket rows), as HTTP when `http.client` or
  `urllib` frames show it;
- `queue-workers`: a consumer blocked in `Queue.get`, `Connection.recv`, `Future.result`,
  a pool's `AsyncResult.get` or `multiprocessing.connection.wait` waits for its worker
  children; a dead worker (State Z, gone, crashed) is named with how it died when a log
  line or its exit says so (a signal, the OOM killer);
- `fork-lock`: a thread of a forked child (its stack starts in `os.fork` /
  `popen_fork.Popen._launch`) waits on a lock that no thread of the child can release
  (fork copies only the calling thread); the parent's threads that take that lock are named;
- `kernel`: a thread in State D, from the latest `/proc` status or thread copy (never the
  first), waits for the kernel: the wchan says which part (FUSE, NFS, block I/O, a driver).

Evidence comes from `bundle.process_relations`, `thread_states`, `fd_entries`,
`socket_rows`, `proc_states` and `log_events` (issue 30's captures), the stacks in the
analysis, and the source of the frames when given (read through `procfacts`). Pure: no I/O.

The producers live by what they wait on: `waits_children` (child-process, queue-workers),
`waits_io` (pipes, kernel) and `waits_fork` (fork-lock). They are registered here, in one
place and in the order above, so the graph's edges come in that order whichever module is
imported first.
"""

from __future__ import annotations

from reporter.analysis.waitgraph import producer
from reporter.analysis.waits_children import child_process, queue_workers
from reporter.analysis.waits_fork import fork_lock
from reporter.analysis.waits_io import kernel, pipes

producer("child-process")(child_process)
producer("pipes")(pipes)
producer("queue-workers")(queue_workers)
producer("fork-lock")(fork_lock)
producer("kernel")(kernel)
