"""Rankings of policies in two runtimes: pairs counted by hand, and the words the report uses."""

from __future__ import annotations

from itertools import combinations

from iolab.validation.io_comparison import ranking, ranking_words


def by_hand(values, tie=0.01):
    """Each pair once: a tie if the simulator's values are within ``tie`` of the larger, else the two
    runtimes agree on its order or not."""
    out = {"concordant": 0, "discordant": 0, "ties": 0}
    for a, b in combinations(values, 2):
        (ea, sa), (eb, sb) = values[a], values[b]
        if abs(sa - sb) <= tie * max(abs(sa), abs(sb)):
            out["ties"] += 1
        elif (ea < eb) == (sa < sb):
            out["concordant"] += 1
        else:
            out["discordant"] += 1
    return out


def test_pairs_and_words():
    same = {"a": (1.0, 10.0), "b": (2.0, 20.0), "c": (3.0, 30.0)}
    r = ranking(same)
    assert r["same"] and r["agree"] and (r["concordant_pairs"], r["discordant_pairs"], r["tied_pairs"]) == (3, 0, 0)
    assert ranking_words(r) == "same order"

    # b and c swap in the real runs, but the simulation puts them within 1 %: a tie, not a disagreement
    tied = {"a": (1.0, 10.0), "b": (3.0, 20.0), "c": (2.0, 20.1)}
    r = ranking(tied)
    assert not r["same"] and r["agree"] and r["tied_pairs"] == 1 and r["discordant_pairs"] == 0
    assert ranking_words(r).startswith("same order up to ties: no discordant pair; 1 pair(s)")

    swapped = {"a": (1.0, 10.0), "b": (3.0, 20.0), "c": (2.0, 30.0)}
    r = ranking(swapped)
    assert not r["agree"] and r["discordant_pairs"] == 1 and r["emulator"] == ["a", "c", "b"]
    assert ranking_words(r) == "order differs: 1 discordant pair(s), 0 tie(s) within 1 %"


def test_counts_match_a_pair_by_pair_count_on_table1_like_values():
    """The Table 1 medians of 2026-11-24 (real, simulated makespans): 24 concordant, 0 discordant, 4 ties."""
    values = {"lowest-id": (292.1, 292.2), "longest-io": (335.3, 334.8), "shortest-io": (285.4, 285.3),
              "shortest-remaining": (381.8, 381.5), "longest-remaining": (296.8, 292.6), "fifo": (305.7, 305.2),
              "bandwidth": (307.6, 302.3), "stretch": (296.8, 291.0)}
    r, h = ranking(values), by_hand(values)
    assert (r["concordant_pairs"], r["discordant_pairs"], r["tied_pairs"]) == (h["concordant"], h["discordant"],
                                                                              h["ties"])
    assert sum(h.values()) == 28 and h["discordant"] == 0
