#!/usr/bin/env bash
# tests/test-negative-list.sh - the deliberate bugs of src/base/debug.h (the
# source of truth for their names and numbers) and the list of
# tests/negative-controls.sh (which test catches each) name the same bugs.
# Builds nothing; "make negative-controls" runs the controls themselves.
srcdir=${top_srcdir:-${srcdir:-.}}
exec bash "$srcdir/tests/negative-controls.sh" --check
