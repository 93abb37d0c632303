"""Matrix instructions of the SPIR-V checker (kernellab.spirvsim.matrix) against exact values."""
from __future__ import annotations

import numpy as np

from kernellab.spirvsim import matrix
from kernellab.spirvsim.types import Type


def test_determinant_and_inverse_by_cofactors() -> None:
    """Determinant and MatrixInverse expand by cofactors, as shader compilers do: an integer
    matrix's determinant is exact (LU's rounding gave 74 +- 3e-14, outside the CTS's
    determinant_compute_fp64_mat_3x3 tolerance of one ulp), and the adjugate inverse matches."""
    cols = ((1.0, 5.0, 3.0), (2.0, 4.0, 7.0), (4.0, 6.0, 2.0))
    mat = tuple(tuple(np.array([v], np.float64) for v in col) for col in cols)
    scalar = Type(0, "float", width=64)
    assert float(matrix.glsl("Determinant", mat, scalar)[0]) == 74.0
    inv = matrix.glsl("MatrixInverse", mat, scalar)
    product = np.array([[c[r][0] for r in range(3)] for c in inv]).T @ np.array(cols).T
    assert np.allclose(product, np.eye(3), atol=1e-15)
    singular = tuple(tuple(np.array([v], np.float64) for v in col) for col in (cols[0], cols[0], cols[2]))
    assert np.isinf(np.array([[c[r][0] for r in range(3)] for c in matrix.glsl("MatrixInverse", singular, scalar)])).all()
