"""The token table, looked up in numpy instead of inside the compiled model.

The INT8 model stores its 30,522 x 384 token table as int8 with one scale per row.
OpenVINO's CPU plugin folds that into a float32 table of 47 MB in every compiled
model: resident in each process, and in each compiled-model cache file. Cut out of
the graph, the table stays int8 (11.7 MB) and the model takes the looked-up rows as
an input: the same float32 products as the folded table, so the same vectors.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

TOKEN_ROWS = "token_rows"
"""The model input that replaces the table lookup: [batch, tokens, dimension] float32."""


@dataclass(frozen=True)
class TokenTable:
    table: np.ndarray
    """int8 [vocabulary, dimension]"""
    scale: np.ndarray
    """float32 [vocabulary, 1]"""

    def rows(self, ids: np.ndarray) -> np.ndarray:
        return self.table[ids].astype(np.float32) * self.scale[ids]

    def mapped(self, folder: Path, key: str) -> TokenTable:
        """The table read through a memory map of a copy in ``folder`` (written once per
        ``key``): only the rows of tokens in use become resident, and the processes of
        the user share them. A copy in memory when the folder cannot be written."""
        path = folder / f"tokens-{key}-{self.table.shape[0]}x{self.table.shape[1]}.npy"
        try:
            if not path.is_file():
                folder.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=".tokens-", suffix=".npy", dir=folder)
                try:
                    with os.fdopen(fd, "wb") as fh:
                        np.save(fh, self.table)
                    os.replace(tmp, path)
                finally:
                    with contextlib.suppress(OSError):
                        os.unlink(tmp)
            table = np.load(path, mmap_mode="r")
        except (OSError, ValueError):
            table = None
        if table is None or table.shape != self.table.shape or table.dtype != self.table.dtype:
            return replace(self, table=np.array(self.table))
        return replace(self, table=table)


def _node(op: Any, port: int) -> Any:
    return op.input(port).get_source_output().get_node()


def _is(op: Any, kind: str) -> bool:
    return bool(op.get_type_name() == kind)


def _reads_input_ids(op: Any) -> bool:
    while _is(op, "Convert"):
        op = _node(op, 0)
    return _is(op, "Parameter") and "input_ids" in op.output(0).get_names()


def cut_token_table(model: Any) -> TokenTable | None:
    """Replace ``Gather(Convert(int8 table) * scale, input_ids, axis 0)`` in ``model`` by
    the input ``TOKEN_ROWS``; None, and the model untouched, when it has no such lookup
    (a folder converted another way is compiled as it is). The table returned is a view
    into ``model``'s weights: call ``mapped`` before the model is dropped."""
    import openvino as ov
    import openvino.opset13 as ops

    for gather in model.get_ordered_ops():
        if not _is(gather, "Gather") or not _reads_input_ids(_node(gather, 1)):
            continue
        scaled, axis = _node(gather, 0), _node(gather, 2)
        if not (_is(scaled, "Multiply") and _is(axis, "Constant")) or axis.get_data().any():
            continue
        convert, scale = _node(scaled, 0), _node(scaled, 1)
        if not (_is(convert, "Convert") and _is(scale, "Constant")):
            continue
        weights = _node(convert, 0)
        if not _is(weights, "Constant") or weights.get_output_element_type(0) != ov.Type.i8:
            continue
        table = np.asarray(weights.get_data())  # a view into the model's weights
        factors = np.array(scale.get_data(), dtype=np.float32)
        if table.dtype != np.int8 or table.ndim != 2 or factors.shape != (table.shape[0], 1):
            continue
        rows = ops.parameter([-1, -1, table.shape[1]], np.float32, name=TOKEN_ROWS)
        rows.output(0).get_tensor().set_names({TOKEN_ROWS})
        for target in list(gather.output(0).get_target_inputs()):
            target.replace_source_output(rows.output(0))
        model.add_parameters([rows])
        model.validate_nodes_and_infer_types()
        return TokenTable(table, factors)
    return None
