"""drivers/progress.py: the short progress line, its time left and its bar (terminal only)."""
from drivers import progress


def test_line_with_and_without_a_terminal():
    plain = progress.line(3, 50, 12.0, figure="ELBO -1.2e+06", terminal=False)
    assert plain == "iteration 3/50 6%, 12 s, about 3 min 08 s left: ELBO -1.2e+06"
    bar = progress.line(10, 20, 100.0, terminal=True)
    assert bar == "iteration 10/20 [##########..........] 50%, 1 min 40 s, about 1 min 40 s left"
    assert progress.line(20, 20, 3700.0, terminal=False) == "iteration 20/20 100%, 1 h 01 min"
    assert len(plain) < 80


class Lines:
    """A logger that keeps what it is told."""

    def __init__(self):
        self.lines = []

    def info(self, fmt, *args):
        self.lines.append(fmt % args)


def test_ticking_logs_every_few_seconds_with_the_time_left(monkeypatch):
    """A phase in this process (prepare's documents, evaluate's blocks): the items as they are, a line every
    ``every`` seconds of the caller's work (none for a phase shorter than that), its estimate from the mean so far."""
    monkeypatch.setattr("sys.stderr.isatty", lambda: False)
    now = [0.0]
    log = Lines()
    items = []
    for item in progress.ticking(range(6), 6, "prepare: documents", log, every=10.0, clock=lambda: now[0]):
        items.append(item)
        now[0] += 4.0                       # each item takes 4 s
    assert items == list(range(6))
    assert log.lines == ["prepare: documents 3/6 50%, 12 s, about 12 s left"]     # then 4, 8 s since: none
    quiet = Lines()
    assert list(progress.ticking(range(3), 3, "x", quiet, every=10.0, clock=lambda: 0.0)) == [0, 1, 2]
    assert quiet.lines == []



def test_steps_log_every_few_seconds_and_the_last_step_with_the_time_left(monkeypatch):
    """Steps counted one at a time (infvoc's online steps over passes and minibatches): a line when ``every``
    seconds have passed since the last one and at the last step, each with the figure the caller gives."""
    monkeypatch.setattr("sys.stderr.isatty", lambda: False)
    now = [0.0]
    log = Lines()
    steps = progress.Steps(5, "train: online step", log, every=10.0, clock=lambda: now[0])
    for i in range(5):
        now[0] += 4.0                       # each step takes 4 s
        steps.step(f"minibatch {i + 1}/5")
    assert log.lines == ["train: online step 3/5 60%, 12 s, about 8 s left: minibatch 3/5",
                         "train: online step 5/5 100%, 20 s: minibatch 5/5"]
