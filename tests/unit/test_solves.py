"""Solve rate per task (observe/solves.py): the run summary's line and the report's table."""

from __future__ import annotations

from datagen.observe.solves import Rate, solve_html, solve_line


def test_the_line_says_each_task_solve_rate_when_there_are_few() -> None:
    rates = {
        "a": Rate("Open the cart", episodes=3, solved=3),
        "b": Rate("Go to page 5", episodes=3, solved=1),
        "c": Rate("Sort by <b>", episodes=3, solved=0),
    }
    line = solve_line(rates)
    assert line == (
        "solve rate per task: mean 44% over 3 tasks; every episode solved 1, some 1, none 1: "
        "a 3/3, b 1/3, c 0/3"
    )
    html = solve_html(rates)
    assert "<td>b</td><td>Go to page 5</td><td>1/3</td><td>33%</td>" in html
    assert "Sort by &lt;b&gt;" in html  # the instruction comes from a page: escaped


def test_many_tasks_are_left_to_the_report_and_one_episode_each_is_no_rate() -> None:
    many = {f"t{i:02}": Rate("x", episodes=2, solved=i % 3 and 1) for i in range(30)}
    assert solve_line(many).endswith("(each task's in the run report)")
    assert solve_line({"a": Rate("x", episodes=1, solved=1)}) == ""
    assert solve_html({}) == ""
