#!/usr/bin/env bash
# Imports follow the layers: a module of the core crate imports a name from the module that
# defines it, never back up through the crate root's re-exports (`use crate::Limit`), which
# would hide which layer depends on which. Doc links may name the root paths users see.
set -euo pipefail
cd "$(dirname "$0")/.."

# Root re-exports: the names `pub use`d by lib.rs.
names=$(sed -n 's/^pub use [a-z_:]*::{\{0,1\}\([^;}]*\)}\{0,1\};$/\1/p' crates/core/src/lib.rs | tr ',' '\n' | tr -d ' ' | grep -v '^$' | paste -sd'|' -)
# Code lines (not comments) that reach a root re-export as `crate::Name` or `crate::{..Name..}`.
found=$(grep -rnE "crate::(\{[^}]*\b($names)\b|($names)\b)" crates/core/src \
  | grep -vE '^[^:]+:[0-9]+:\s*//' | grep -v '^crates/core/src/lib.rs:' || true)
if [ -n "$found" ]; then
  echo "imports through the crate root's re-exports (import from the defining module):" >&2
  echo "$found" >&2
  exit 1
fi
echo "layers: every core import names its defining module"
