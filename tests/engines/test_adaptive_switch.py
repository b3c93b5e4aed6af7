"""The corpus reader's switch of adaptive execution is the session's: threads planning side by side in one session
(pyspark.ml's CrossValidator with ``parallelism``) must leave the user's setting as it was."""
import threading

from drivers.corpora.bow import without_adaptive_execution

KEY = "spark.sql.adaptive.enabled"


def _interleaved(spark):
    """A enters, B enters, A leaves, B leaves: what B sees after A left, and the setting at the end."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def thread_a():
        with without_adaptive_execution(spark):
            a_in.set()
            b_in.wait(10)
        a_out.set()

    def thread_b():
        a_in.wait(10)
        with without_adaptive_execution(spark):
            b_in.set()
            a_out.wait(10)
            seen["inside after A left"] = spark.conf.get(KEY)

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    return seen["inside after A left"], spark.conf.get(KEY, None)


def test_overlapping_threads_restore_the_users_setting(spark_session):
    previous = spark_session.conf.get(KEY, None)
    try:
        spark_session.conf.set(KEY, "true")
        inside, after = _interleaved(spark_session)
        assert inside == "false"       # B still plans without AQE after A left
        assert after == "true"         # the user's setting is back, not B's saved "false"
        with without_adaptive_execution(spark_session, off=False):
            assert spark_session.conf.get(KEY) == "true"
    finally:
        if previous is None:
            spark_session.conf.unset(KEY)
        else:
            spark_session.conf.set(KEY, previous)
