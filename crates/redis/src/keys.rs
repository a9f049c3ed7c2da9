//! Key naming: every Redis key of one limiter key shares a cluster hash tag.

/// Builds the Redis key names of a limiter key.
///
/// A limiter key `k` under prefix `p` becomes `p:{#k}:log`, `p:{#k}:meta` (the exact log) or
/// `p:{#k}:buckets` (the `#` keeps the tag non-empty for the empty key: Redis Cluster
/// hashes a whole name whose tag is empty). Redis Cluster hashes only the part between the first `{` and the next
/// `}`, so all keys of one limiter key land in one slot and one script may touch them all.
/// The prefix holds no `{`, so the tag starts at ours; if `k` itself holds a `}`, the tag
/// ends there, but identically for every key of `k`, so they still share a slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KeySpace {
    prefix: String,
}

impl KeySpace {
    /// A key space under `prefix`, with any `{` or `}` in it replaced by `_`.
    pub(crate) fn new(prefix: &str) -> Self {
        Self {
            prefix: prefix.replace(['{', '}'], "_"),
        }
    }

    /// The exact log's two keys: the sorted set and its bookkeeping hash.
    pub(crate) fn exact(&self, key: &str) -> [String; 2] {
        [
            format!("{}:{{#{key}}}:log", self.prefix),
            format!("{}:{{#{key}}}:meta", self.prefix),
        ]
    }

    /// The rolling buckets' hash.
    pub(crate) fn buckets(&self, key: &str) -> String {
        format!("{}:{{#{key}}}:buckets", self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::KeySpace;

    /// The hash tag Redis Cluster would use: from the first `{` to the next `}`.
    fn hash_tag(name: &str) -> &str {
        let open = name.find('{').expect("tagged");
        let close = name[open + 1..].find('}').expect("closed") + open + 1;
        &name[open + 1..close]
    }

    #[test]
    fn keys_of_one_limiter_key_share_a_hash_tag() {
        let space = KeySpace::new("rl{x}");
        for key in ["user:1", "a}b", "", "{"] {
            let [log, meta] = space.exact(key);
            assert_eq!(hash_tag(&log), hash_tag(&meta), "{log} vs {meta}");
            assert_eq!(hash_tag(&log), hash_tag(&space.buckets(key)));
        }
        assert_eq!(space.exact("u")[0], "rl_x_:{#u}:log");
    }
}
