"""benchmarks.bench_vmap at one round, in-process: its vmap answers equal the loop's (it
checks each before timing it), and the sections run; no figure is asserted."""

from benchmarks import bench_vmap


def test_the_control_flow_and_rule_sections_run_and_check_their_answers():
    for rows in (bench_vmap.run_control(repeats=1), bench_vmap.run_rules(repeats=1)):
        assert rows and all(first > 0 and later > 0 and loop > 0
                            for _, first, later, loop in rows)


def test_the_contract_section_times_cases_of_the_contract():
    rows, skipped = bench_vmap.run_contract(count=12, repeats=1)
    (first, count, median, largest, over), later = rows
    assert first == "first call" and later[0] == "later calls"
    assert count + skipped == 12 and count == later[1]
    assert 0 < median <= largest and 0 <= over <= count
