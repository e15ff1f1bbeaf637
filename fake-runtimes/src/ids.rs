//! Deterministic ids.
//!
//! Every id is a hash of the seed and a counter, so two runs against a fresh
//! store print the same ids while ids stay unique within a store.

/// FNV-1a, then a splitmix finaliser so nearby counters give unrelated bits.
pub fn hash64(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.as_bytes().iter().chain(std::iter::once(&0xff)) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    let mut z = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A UUID-shaped id with the given version nibble (7 like codex, 4 like Claude).
///
/// Real thread ids parse as UUIDs; adapters may rely on that.
pub fn uuid(version: u8, parts: &[&str]) -> String {
    let hi = hash64(parts);
    let mut salted: Vec<&str> = parts.to_vec();
    salted.push("lo");
    let lo = hash64(&salted);
    let time_hi = (hi & 0x0fff) | (u64::from(version & 0xf) << 12);
    let clock = (lo >> 48 & 0x3fff) | 0x8000;
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        hi >> 32,
        (hi >> 16) & 0xffff,
        time_hi,
        clock,
        lo & 0xffff_ffff_ffff
    )
}

/// Short lowercase hex id (Claude's sub-agent task ids look like this).
pub fn hex(len: usize, parts: &[&str]) -> String {
    let mut s = format!(
        "{:016x}{:016x}",
        hash64(parts),
        hash64(&[parts, &["x"]].concat())
    );
    s.truncate(len.min(32));
    s
}

/// True when `s` has the 8-4-4-4-12 hex shape of a UUID.
pub fn looks_like_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_shape_and_determinism() {
        let a = uuid(7, &["seed", "1"]);
        assert!(looks_like_uuid(&a), "{a}");
        assert_eq!(a, uuid(7, &["seed", "1"]));
        assert_ne!(a, uuid(7, &["seed", "2"]));
        assert_eq!(&a[14..15], "7");
        assert_eq!(hex(17, &["t"]).len(), 17);
    }
}
