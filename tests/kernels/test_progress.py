"""drivers/progress.py: the short progress line, its time left and its bar (terminal only)."""
from drivers import progress


def test_line_with_and_without_a_terminal():
    plain = progress.line(3, 50, 12.0, figure="ELBO -1.2e+06", terminal=False)
    assert plain == "iteration 3/50 6%, 12 s, about 3 min 08 s left: ELBO -1.2e+06"
    bar = progress.line(10, 20, 100.0, terminal=True)
    assert bar == "iteration 10/20 [##########..........] 50%, 1 min 40 s, about 1 min 40 s left"
    assert progress.line(20, 20, 3700.0, terminal=False) == "iteration 20/20 100%, 1 h 01 min"
    assert len(plain) < 80
