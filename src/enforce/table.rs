//! A bounded map whose entries expire: the shape of every piece of enforcement state
//! (sessions, pending elicitations, recent declines, rate windows).
//!
//! Owns the two bounds every table has: a time to live per entry and a maximum number of
//! entries (the oldest entry is evicted when a new one would exceed it). Time is passed in by
//! the caller, so the table is deterministic and testable without a clock.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::{Duration, Instant};

struct Entry<V> {
    value: V,
    expires: Instant,
    /// Insertion generation, so a stale queue slot does not evict a re-inserted key.
    generation: u64,
}

/// A map with per-entry expiry and a size bound.
pub struct TtlTable<K, V> {
    map: HashMap<K, Entry<V>>,
    /// Keys in insertion order with their generation (for eviction and sweeping).
    order: VecDeque<(K, u64)>,
    capacity: usize,
    next_generation: u64,
    evicted: u64,
}

impl<K: Eq + Hash + Clone, V> TtlTable<K, V> {
    pub fn new(capacity: usize) -> Self {
        Self {
            map: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            next_generation: 0,
            evicted: 0,
        }
    }

    /// Live entries (expired ones not yet swept may be counted until the next sweep).
    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Entries dropped because the table was full (not expired ones).
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// Inserts or replaces `key`, expiring `ttl` after `now`.
    pub fn insert(&mut self, key: K, value: V, now: Instant, ttl: Duration) {
        self.sweep(now);
        if !self.map.contains_key(&key) {
            while self.map.len() >= self.capacity {
                if !self.pop_oldest() {
                    break;
                }
                self.evicted += 1;
            }
        }
        let generation = self.next_generation;
        self.next_generation += 1;
        self.order.push_back((key.clone(), generation));
        self.map.insert(
            key,
            Entry {
                value,
                expires: later(now, ttl),
                generation,
            },
        );
        // Replaced keys leave stale slots in `order`; compact when they dominate.
        if self.order.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.order
                .retain(|(k, g)| map.get(k).is_some_and(|e| e.generation == *g));
        }
    }

    /// The live value for `key`.
    pub fn get(&self, key: &K, now: Instant) -> Option<&V> {
        self.map
            .get(key)
            .filter(|e| e.expires > now)
            .map(|e| &e.value)
    }

    /// The live value for `key`, mutably.
    pub fn get_mut(&mut self, key: &K, now: Instant) -> Option<&mut V> {
        self.map
            .get_mut(key)
            .filter(|e| e.expires > now)
            .map(|e| &mut e.value)
    }

    /// Pushes `key`'s expiry to `ttl` after `now` (sliding expiry for sessions).
    pub fn touch(&mut self, key: &K, now: Instant, ttl: Duration) {
        if let Some(e) = self.map.get_mut(key).filter(|e| e.expires > now) {
            e.expires = later(now, ttl);
        }
    }

    /// Removes and returns the live value for `key`.
    pub fn remove(&mut self, key: &K, now: Instant) -> Option<V> {
        let entry = self.map.remove(key)?;
        (entry.expires > now).then_some(entry.value)
    }

    /// Drops every expired entry at the front of the insertion order, and any entry whose
    /// expiry was reached.
    pub fn sweep(&mut self, now: Instant) {
        while let Some((key, generation)) = self.order.front() {
            match self.map.get(key) {
                Some(e) if e.generation == *generation && e.expires > now => break,
                Some(e) if e.generation == *generation => {
                    let key = key.clone();
                    self.map.remove(&key);
                    self.order.pop_front();
                }
                // Stale slot: the key was removed or re-inserted later.
                _ => {
                    self.order.pop_front();
                }
            }
        }
    }

    /// Removes the oldest live entry; false when the table is empty.
    fn pop_oldest(&mut self) -> bool {
        while let Some((key, generation)) = self.order.pop_front() {
            if self
                .map
                .get(&key)
                .is_some_and(|e| e.generation == generation)
            {
                self.map.remove(&key);
                return true;
            }
        }
        false
    }

    /// Removes every entry whose key matches `predicate` (e.g. all state of one session).
    pub fn retain_keys(&mut self, mut keep: impl FnMut(&K) -> bool) {
        self.map.retain(|k, _| keep(k));
    }
}

/// `now + ttl`, saturating: an absurdly long configured duration means "never", not a panic.
fn later(now: Instant, ttl: Duration) -> Instant {
    now.checked_add(ttl)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn entries_expire_after_their_ttl() {
        let t0 = Instant::now();
        let mut t = TtlTable::new(10);
        t.insert("a", 1, t0, S);
        assert_eq!(t.get(&"a", t0), Some(&1));
        assert_eq!(t.get(&"a", t0 + S), None);
        t.sweep(t0 + S);
        assert!(t.is_empty());
    }

    #[test]
    fn the_oldest_entry_is_evicted_when_full() {
        let t0 = Instant::now();
        let mut t = TtlTable::new(2);
        t.insert("a", 1, t0, S * 10);
        t.insert("b", 2, t0, S * 10);
        t.insert("c", 3, t0, S * 10);
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(&"a", t0), None);
        assert_eq!(t.get(&"c", t0), Some(&3));
        assert_eq!(t.evicted(), 1);
    }

    #[test]
    fn reinserting_a_key_does_not_let_its_old_slot_evict_it() {
        let t0 = Instant::now();
        let mut t = TtlTable::new(2);
        t.insert("a", 1, t0, S * 10);
        t.insert("b", 2, t0, S * 10);
        t.remove(&"a", t0);
        t.insert("a", 3, t0, S * 10);
        t.insert("c", 4, t0, S * 10);
        // "b" is now the oldest live entry.
        assert_eq!(t.get(&"b", t0), None);
        assert_eq!(t.get(&"a", t0), Some(&3));
    }

    #[test]
    fn touch_extends_and_remove_takes() {
        let t0 = Instant::now();
        let mut t = TtlTable::new(4);
        t.insert(1, "x", t0, S);
        t.touch(&1, t0 + S / 2, S);
        assert_eq!(t.get(&1, t0 + S), Some(&"x"));
        assert_eq!(t.remove(&1, t0 + S), Some("x"));
        assert_eq!(t.remove(&1, t0 + S), None);
    }

    #[test]
    fn absurd_ttls_do_not_overflow() {
        let t0 = Instant::now();
        let mut t = TtlTable::new(4);
        t.insert(1, (), t0, Duration::MAX);
        t.touch(&1, t0, Duration::MAX);
        assert!(t.get(&1, t0).is_some());
    }

    #[test]
    fn stays_bounded_under_churn() {
        let t0 = Instant::now();
        let mut t = TtlTable::new(100);
        for i in 0..100_000u32 {
            t.insert(i % 150, i, t0, S);
        }
        assert!(t.len() <= 100);
        assert!(t.order.len() <= 2 * 100 + 64 + 1);
    }
}
