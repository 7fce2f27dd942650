"""Block is a tuple ``(queries, snapshot)`` (hashing, equality and order in C): its order must be the
canonical block order (queries, then snapshot type, unshared first), and it must stay immutable and
round-trip through pickle and JSON."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cepopt.errors import CepoptError
from cepopt.gloria.plan import Block, sort_blocks

names = st.sampled_from([f"q{i}" for i in range(6)])
snapshots = st.sampled_from(["A", "B", "C"])
blocks = st.one_of(names.map(lambda q: Block((q,))),
                   st.tuples(st.sets(names, min_size=2, max_size=4), snapshots).map(lambda t: Block(t[0], t[1])))


def _canonical(block: Block) -> tuple:
    return (block.queries, block.snapshot or "")


@given(st.lists(blocks, max_size=8))
def test_the_tuple_order_is_the_canonical_block_order(bs):
    assert list(sort_blocks(bs)) == sorted(bs, key=_canonical)


@given(blocks, blocks)
def test_equal_blocks_hash_alike_and_compare_by_fields(b1, b2):
    same = (b1.queries, b1.snapshot) == (b2.queries, b2.snapshot)
    assert (b1 == b2) == same
    if same:
        assert hash(b1) == hash(b2)


@given(blocks)
def test_a_block_round_trips_and_stays_immutable(block):
    assert pickle.loads(pickle.dumps(block)) == block
    assert Block(**block.to_json()) == block
    assert repr(block) == f"Block(queries={block.queries!r}, snapshot={block.snapshot!r})"
    assert block.members == frozenset(block.queries) and block.shared == (block.snapshot is not None)
    with pytest.raises(AttributeError):
        block.snapshot = "Z"


def test_invalid_blocks_are_refused():
    for queries, snapshot in (((), None), (("a", "b"), None), (("a",), "A")):
        with pytest.raises(CepoptError):
            Block(queries, snapshot)
    assert Block(("b", "a"), "A").queries == ("a", "b")


@given(st.sets(names, min_size=2, max_size=4), snapshots, snapshots)
def test_resnapshot_is_the_block_built_with_the_other_snapshot(queries, x, y):
    block = Block(queries, x).resnapshot(y)
    built = Block(queries, y)
    assert block == built and type(block) is Block and repr(block) == repr(built)
    assert block.members == built.members == frozenset(queries)
    assert pickle.loads(pickle.dumps(block)) == built


def test_resnapshot_refuses_an_unshared_result():
    with pytest.raises(CepoptError):
        Block(("q1", "q2"), "A").resnapshot(None)
    with pytest.raises(CepoptError):
        Block(("q1",)).resnapshot("A")
