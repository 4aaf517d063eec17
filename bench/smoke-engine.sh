#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# bench-engine's jobs, briefly, on a small file in the build directory:
# every request must complete with the data last written.  The timings
# are ignored.
exec ./bench-engine --smoke
