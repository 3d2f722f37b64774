"""triton.autotune over the chain kernel's tile: every configuration of the search space computes
the reference (on CPU in Triton's interpreter, where nothing is timed), the hand-picked tile
among them."""

from trainlab.kernels import autotune


def test_every_configuration_in_the_search_space_computes_the_reference():
    result = autotune.run("cpu", shape=(300, 200))  # edges in both dimensions for every tile
    assert len(result["rows"]) == len(autotune.CONFIGS) >= 4
    bad = [r for r in result["rows"] if not r["valid"]]
    assert not bad, bad
    assert not result["timed"] and result["best"] is None  # the interpreter times NumPy: nothing is claimed
    tiles = {(r["BLOCK_M"], r["BLOCK_C"]) for r in result["rows"]}
    assert (result["hand_picked"]["BLOCK_M"], result["hand_picked"]["BLOCK_C"]) in tiles
