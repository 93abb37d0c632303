"""clspv names the text it compiles "source" and counts its lines physically (it ignores
``#line``): its log is mapped back through the markers to the user's files and lines."""
from __future__ import annotations

from kernellab.compile.build_log import presumed_locations
from kernellab.compile.opencl_stages import clspv_source


def test_a_clspv_location_names_the_marked_file_and_line() -> None:
    text = clspv_source('#line 1 "/w/k.cl"\nkernel void k() {\n#line 1 "/w/a \\"b\\".h"\nint x\n#line 3 "/w/k.cl"\n  oops;\n}\n',
                        ["-DN=4"])
    # physical lines: 1 #define N 4, 2 #line 1, 3 #line 1 "/w/k.cl", 4 kernel..., 5 #line 1 "/w/a..h",
    # 6 int x, 7 #line 3 "/w/k.cl", 8 oops;
    log = ("source:4:1: warning: w\nsource:6:4: error: expected ';'\n"
           "source:8:3: error: undeclared\n  7 | oops\nnot/source:7:3 stays")
    assert presumed_locations(log, text).splitlines() == [
        "/w/k.cl:1:1: warning: w", '/w/a "b".h:1:4: error: expected \';\'', "/w/k.cl:3:3: error: undeclared",
        "  7 | oops", "not/source:7:3 stays"]


def test_without_markers_the_lines_are_kept() -> None:
    assert presumed_locations("source:5:31: error: e", "a\nb\n") == "source:5:31: error: e"
