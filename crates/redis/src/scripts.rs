//! The server-side scripts, loaded once per server and called by SHA.
//!
//! Each script is sent with `SCRIPT LOAD` on first use; the SHA it answers is kept and every
//! call is an `EVALSHA`. When the server answers `NOSCRIPT` (it restarted, or someone ran
//! `SCRIPT FLUSH`), the script is loaded again and the call repeated once, within the same
//! deadline.

use std::sync::Mutex;

/// A Lua script and the SHA the server gave it.
#[derive(Debug)]
pub(crate) struct LuaScript {
    pub(crate) source: &'static str,
    sha: Mutex<Option<String>>,
}

impl LuaScript {
    const fn new(source: &'static str) -> Self {
        Self {
            source,
            sha: Mutex::new(None),
        }
    }

    /// The SHA from the last load, if any.
    pub(crate) fn sha(&self) -> Option<String> {
        self.sha
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Remembers the SHA a load answered.
    pub(crate) fn set_sha(&self, sha: String) {
        *self
            .sha
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(sha);
    }
}

/// The exact sliding log: `check`, `take` (a lease), `hit`, `status`.
pub(crate) static EXACT: LuaScript = LuaScript::new(include_str!("scripts/exact.lua"));

/// The rolling buckets: `check`, `hit`, `status`.
pub(crate) static BUCKETS: LuaScript = LuaScript::new(include_str!("scripts/buckets.lua"));
