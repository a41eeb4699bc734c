"""riscv_vector's claims are checked against its rows: other rows, other (or negated) claims."""
from __future__ import annotations

from emukern.bench import riscv_vector as R


def _ns(ratios: dict[int, float]) -> dict:
    out = {}
    for v, r in ratios.items():
        for impl in ("deferred", "eager"):
            out[f"{impl}/vlen{v}/discard0"] = {"cycles_per_iter": 100.0}
            out[f"{impl}/vlen{v}/discard1"] = {"cycles_per_iter": 100.0 * r}
    return out


def _lat(per_vlen: dict[int, tuple[float, float]], d_saves: int = 0) -> dict:
    out = {}
    for v, (e, d) in per_vlen.items():
        out[f"eager/vlen{v}/discard1"] = {"cycles_per_switch": e, "saves": 98, "nr_switches": 100,
                                          "discards": 410, "round_trips": 100, "restores": 0}
        out[f"deferred/vlen{v}/discard1"] = {"cycles_per_switch": d, "saves": d_saves, "nr_switches": 100,
                                             "discards": 208, "round_trips": 100, "restores": 100}
    out["eager/vlen512/discard0"] = {"cycles_per_switch": 1000.0}
    out["deferred/vlen512/discard0"] = {"cycles_per_switch": 1010.0}
    return out


SEQ = {"discard": 36, "save": 78, "restore": 81}


def test_vlen_claim_flat_and_not_flat():
    flat = R.vlen_claim(_ns({128: 1.2, 256: 1.2, 512: 1.2}), _lat({v: (1000, 930) for v in R.VLENS}),
                        {v: SEQ for v in R.VLENS})
    assert flat.startswith("VLEN: flat") and "x1.200-x1.200" in flat and "-7.00 % to -7.00 %" in flat
    steep = R.vlen_claim(_ns({128: 1.1, 256: 1.2, 512: 1.4}), _lat({v: (1000, 930) for v in R.VLENS}),
                         {v: SEQ for v in R.VLENS})
    assert steep.startswith("VLEN: NOT flat") and "x1.100-x1.400" in steep


def test_clobber_claim_checks_vlen_independence():
    same = R.clobber_claim({128: SEQ, 256: SEQ, 512: SEQ})
    assert "36 cycles at VLEN 128, 36 cycles at VLEN 256" in same and "the same at every VLEN" in same
    differ = R.clobber_claim({128: SEQ, 256: {**SEQ, "discard": 40}, 512: SEQ})
    assert "40 cycles at VLEN 256" in differ and "NOT the same at every VLEN" in differ


def test_lat_ctx_claims_quote_the_rows():
    text = R.lat_ctx_claims(_lat({512: (1000, 930)}), SEQ)
    assert "at 0.98 of every switch (78 cycles" in text and "clobbers 4.10 times per round trip" in text
    assert "deferred never saves" in text and "clobbers 2.08 times" in text and "restores 1.00 times" in text
    assert "With discard=0 deferred is NOT cheaper too (+1.00 %)" in text
    saved = R.lat_ctx_claims(_lat({512: (1000, 930)}, d_saves=3), SEQ)
    assert "never saves" not in saved and "deferred saved 3 times" in saved
