from __future__ import annotations

import sys

from kernellab.cli import main

sys.exit(main())
