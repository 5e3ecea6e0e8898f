"""benchmarks.bench_vmap at one round, in-process: its vmap answers equal the loop's (it
checks each before timing it), and the sections run; no figure is asserted."""

from benchmarks import bench_vmap


def test_the_control_flow_and_rule_sections_run_and_check_their_answers():
    for rows in (bench_vmap.run_control(repeats=1), bench_vmap.run_rules(repeats=1)):
        assert rows and all(first > 0 and later > 0 and loop > 0
                            for _, first, later, loop in rows)
