"""``pdp-network``'s network specs on the Gibbs engine (issue 28, 3): its flags, reading a spec file or a shipped
spec by name, what the engine refuses (one line naming the node), and which of the driver's hyperparameter steps a spec
needs (the Gamma step of (E20), or slice steps on the summed histograms, E21)."""
from __future__ import annotations

import json
from pathlib import Path

from drivers.models.pdp_network import words_pyp
from drivers.models.pdp_network.shared_roots import shared_families
from inference.constraints import StrOptions
from inference.errors import UsageError
from inference.options import ModelOption
from inference.pdpnet.engine_stats import MAX_GLOBAL, MAX_PARAMS
from inference.pdpnet.spec import SAMPLERS, NetworkSpec

SHIPPED = Path(__file__).resolve().parents[3] / "sample_data" / "networks"


def read_spec_file(name_or_path: str) -> dict:
    """The raw spec of a file, or of a shipped spec by name; one line when neither exists or it is not JSON."""
    p = Path(name_or_path)
    # a shipped spec's name: the command line made it absolute as it does every path flag (jobs/spark.local_path)
    if not p.exists() and p.suffix == "" and (SHIPPED / f"{p.name}.json").exists():
        p = SHIPPED / f"{p.name}.json"
    try:
        return json.loads(p.read_text())
    except OSError:
        shipped = ", ".join(sorted(q.stem for q in SHIPPED.glob("*.json")))
        raise UsageError(f"--network {name_or_path}: no such file, nor a shipped spec ({shipped})") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"--network {p}: not JSON ({exc.msg} at line {exc.lineno})") from None


def check_engine_network(spec: NetworkSpec) -> tuple[float, list[str]]:
    """Refuse (one line naming the node) what the engine cannot run yet; returns the word side's beta and the
    topic families shared by documents (roots or Pitman-Yor vectors indexed by the corpus, kept columns or the
    previous word: the engine's ``network_tc`` rows, :mod:`drivers.models.pdp_network.shared_roots`, :mod:`drivers.models.pdp_network.shared_pyp`)."""
    word = spec.nodes[spec.word.node]
    side = words_pyp.word_side(spec)
    beta = word.alpha if side is None else (side["beta0"] or 0.01)
    global_families, refused = shared_families(spec)
    for name in refused:
        raise UsageError(f"network spec: node '{name}': indexed by {list(spec.nodes[name].index)}: a vector "
                         "shared by several documents, not on the Gibbs engine yet (only document/segment vectors "
                         "and vectors indexed by the corpus, kept columns or the previous word)")
    if len(global_families) > MAX_GLOBAL:
        raise UsageError(f"network spec: node '{global_families[MAX_GLOBAL]}': more than {MAX_GLOBAL} shared topic "
                         f"families ({', '.join(global_families)}; the split engine has {MAX_GLOBAL} rows for them)")
    if len(spec.params) > MAX_PARAMS:
        raise UsageError(f"network spec: more than {MAX_PARAMS} discount or concentration parameters")
    return beta, global_families


def slice_b_names(spec: NetworkSpec, a_values: dict) -> set:
    """The sampled concentrations whose vectors have a discount that is sampled or > 0: slice-sampled on the
    driver from the histograms (E21); the others take the Gamma step of (E20)."""
    out = set()
    for node in spec.nodes.values():
        if node.kind == "pyp" and spec.params[node.b].sample and (spec.params[node.a].sample
                                                                   or a_values[node.a] != 0.0):
            out.add(node.b)
    return out


def needs_histograms(spec: NetworkSpec) -> bool:
    """Whether the driver's global step reads the partitions' discount histograms (table ``discount_counts``): a
    sampled discount, or a sampled concentration sliced (:func:`slice_b_names`), of a topic-side vector (the
    word side's are drawn from the global word tables). A fixed discount keeps its spec value."""
    side = words_pyp.word_side(spec)
    own = words_pyp.side_params(side)
    fixed_a = {n: p.value for n, p in spec.params.items() if p.kind == "a"}
    sampled_a = {n for n, p in spec.params.items() if p.kind == "a" and p.sample}
    return bool((slice_b_names(spec, fixed_a) | sampled_a) - own)


#: what model.json's hyper says of the topic side's sampler (``topic_sampler``)
CMGS_NOTE = ("cmgs: Du's collapsed multiplicity Gibbs sampler (thesis Alg. 2/5); NOT exactly invariant for the "
             "network's joint (a removal drops only forced tables), as the built-in stm/seqlda default")
INDICATORS_NOTE = "indicators: Du's table-indicator sampler ((3.9)/(3.18)), exactly invariant for the network's joint"
EXACT_NOTE = ("exact: the exact multiplicity sampler (removal by S^{c-1}_{t-1}/S^c_t, the seating predictive; the "
              "built-in seqlda --sampler exact), exactly invariant for the network's joint")

#: the model's flags (``--network``, ``--sampler``)
NETWORK = ModelOption("network", "network spec: a JSON file, or the name of a shipped one ("
                      + ", ".join(sorted(q.stem for q in SHIPPED.glob("*.json"))) + ")",
                      type=str, default="stm", metavar="FILE", path=True)
SAMPLER = ModelOption("sampler", "the topic side's sampler, overriding the spec's \"sampler\": indicators (Du's table "
                      "indicators, exactly invariant), cmgs (his collapsed multiplicity sampler: faster, not exactly "
                      "invariant) or exact (the exact multiplicity sampler: exactly invariant, slower than cmgs)", str,
                      metavar="indicators|cmgs|exact",
                      constraint=StrOptions(SAMPLERS))
