#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# A few thousand requests through both schedulers of bench-core: each
# must return every request exactly once.  The timings are ignored.
exec ./bench-core --smoke
