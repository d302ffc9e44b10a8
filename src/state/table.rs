//! A bounded map whose entries expire: the shape of every piece of enforcement state
//! (sessions, pending elicitations, recent declines, rate windows).
//!
//! Owns the bounds every table has: a time to live per entry, a maximum number of entries and,
//! where entries differ in size, a byte budget (the oldest entries are evicted when a new one
//! would exceed either). A table can also hand back what it dropped without an explicit
//! removal (expired, evicted), so the caller can end what those entries stood for (a server
//! call waiting for an answer). Time is passed in by the caller, so the table is deterministic
//! and testable without a clock.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::time::{Duration, Instant};

struct Entry<V> {
    value: V,
    expires: Instant,
    /// Approximate bytes the value holds (0 for tables without a byte budget).
    weight: usize,
    /// Insertion generation, so a stale queue slot does not evict a re-inserted key.
    generation: u64,
}

/// A map with per-entry expiry and a size bound.
pub struct TtlTable<K, V> {
    map: HashMap<K, Entry<V>>,
    /// Keys in insertion order with their generation (for eviction and sweeping).
    order: VecDeque<(K, u64)>,
    capacity: usize,
    /// Byte budget for the sum of entry weights.
    max_weight: usize,
    weight: usize,
    next_generation: u64,
    evicted: u64,
    /// Values dropped by expiry or eviction, kept for [`TtlTable::take_dropped`] when the
    /// table was built [`TtlTable::reporting`].
    dropped: Option<Vec<(K, V, Dropped)>>,
}

/// Why a table let go of an entry nobody removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// Its time to live ran out.
    Expired,
    /// The table was full (entries or bytes) and it was the oldest.
    Evicted,
    /// Removed in bulk by [`TtlTable::retain_keys`].
    Cleared,
}

impl<K: Eq + Hash + Clone, V> TtlTable<K, V> {
    pub fn new(capacity: usize) -> Self {
        Self::with_budget(capacity, usize::MAX)
    }

    /// A table bounded in entries and in the sum of their weights.
    pub fn with_budget(capacity: usize, max_weight: usize) -> Self {
        Self {
            map: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            max_weight,
            weight: 0,
            next_generation: 0,
            evicted: 0,
            dropped: None,
        }
    }

    /// The same table, keeping what expiry and eviction drop for [`TtlTable::take_dropped`].
    pub fn reporting(mut self) -> Self {
        self.dropped = Some(Vec::new());
        self
    }

    /// Values dropped by expiry or eviction since the last call (reporting tables only).
    pub fn take_dropped(&mut self) -> Vec<(V, Dropped)> {
        self.take_dropped_entries()
            .into_iter()
            .map(|(_, v, why)| (v, why))
            .collect()
    }

    /// The keys of what expiry and eviction dropped since the last call.
    pub fn take_dropped_keys(&mut self) -> Vec<(K, Dropped)> {
        self.take_dropped_entries()
            .into_iter()
            .map(|(k, _, why)| (k, why))
            .collect()
    }

    /// Keys and values of what expiry and eviction dropped since the last call.
    pub fn take_dropped_entries(&mut self) -> Vec<(K, V, Dropped)> {
        self.dropped
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Sum of the live entries' weights.
    pub fn weight(&self) -> usize {
        self.weight
    }

    fn report(&mut self, key: K, value: V, why: Dropped) {
        if let Some(d) = self.dropped.as_mut() {
            d.push((key, value, why));
        }
    }

    /// Takes `key`'s entry out of the map, keeping the weight sum right.
    fn take(&mut self, key: &K) -> Option<Entry<V>> {
        let entry = self.map.remove(key)?;
        self.weight -= entry.weight;
        Some(entry)
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
        self.insert_weighted(key, value, 0, now, ttl);
    }

    /// Inserts or replaces `key` holding about `weight` bytes; older entries are evicted while
    /// the table is full or over its byte budget (a value heavier than the whole budget is
    /// still kept, alone).
    pub fn insert_weighted(
        &mut self,
        key: K,
        value: V,
        weight: usize,
        now: Instant,
        ttl: Duration,
    ) {
        self.sweep(now);
        if let Some(old) = self.take(&key) {
            // Replaced, not dropped: whatever it stood for continues under the new value.
            drop(old);
        }
        while self.map.len() >= self.capacity
            || (!self.map.is_empty() && self.weight.saturating_add(weight) > self.max_weight)
        {
            if !self.pop_oldest() {
                break;
            }
            self.evicted += 1;
        }
        let generation = self.next_generation;
        self.next_generation += 1;
        self.order.push_back((key.clone(), generation));
        self.weight = self.weight.saturating_add(weight);
        self.map.insert(
            key,
            Entry {
                value,
                expires: later(now, ttl),
                weight,
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

    /// Removes and returns the live value for `key` (an expired one is dropped as expiry
    /// drops it).
    pub fn remove(&mut self, key: &K, now: Instant) -> Option<V> {
        let entry = self.take(key)?;
        if entry.expires > now {
            return Some(entry.value);
        }
        self.report(key.clone(), entry.value, Dropped::Expired);
        None
    }

    /// Drops every expired entry at the front of the insertion order, and any entry whose
    /// expiry was reached.
    pub fn sweep(&mut self, now: Instant) {
        while let Some((key, generation)) = self.order.front() {
            match self.map.get(key) {
                Some(e) if e.generation == *generation && e.expires > now => break,
                Some(e) if e.generation == *generation => {
                    let key = key.clone();
                    self.order.pop_front();
                    if let Some(entry) = self.take(&key) {
                        self.report(key, entry.value, Dropped::Expired);
                    }
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
                if let Some(entry) = self.take(&key) {
                    self.report(key, entry.value, Dropped::Evicted);
                }
                return true;
            }
        }
        false
    }

    /// Removes every entry whose key does not satisfy `keep` (e.g. all state of one
    /// session); what it removes is reported as dropped.
    pub fn retain_keys(&mut self, mut keep: impl FnMut(&K) -> bool) {
        let gone: Vec<K> = self.map.keys().filter(|k| !keep(k)).cloned().collect();
        for key in gone {
            if let Some(entry) = self.take(&key) {
                self.report(key, entry.value, Dropped::Cleared);
            }
        }
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
    fn the_byte_budget_evicts_the_oldest_and_reports_them() {
        let t0 = Instant::now();
        let mut t = TtlTable::with_budget(100, 1000).reporting();
        t.insert_weighted("a", 1, 400, t0, S * 10);
        t.insert_weighted("b", 2, 400, t0, S * 10);
        assert_eq!(t.weight(), 800);
        t.insert_weighted("c", 3, 400, t0, S * 10);
        assert_eq!(t.weight(), 800);
        assert_eq!(t.get(&"a", t0), None);
        assert_eq!(t.take_dropped(), vec![(1, Dropped::Evicted)]);
        // Heavier than the whole budget: kept alone.
        t.insert_weighted("d", 4, 5000, t0, S * 10);
        assert_eq!(t.len(), 1);
        assert_eq!(
            t.take_dropped(),
            vec![(2, Dropped::Evicted), (3, Dropped::Evicted)]
        );
        assert_eq!(t.remove(&"d", t0), Some(4));
        assert_eq!(t.weight(), 0);
        assert!(
            t.take_dropped().is_empty(),
            "removed entries are not dropped ones"
        );
    }

    #[test]
    fn expiry_is_reported_whether_swept_or_met_on_removal() {
        let t0 = Instant::now();
        let mut t = TtlTable::new(10).reporting();
        t.insert("a", 1, t0, S);
        t.insert("b", 2, t0, S * 10);
        t.sweep(t0 + S);
        assert_eq!(t.take_dropped(), vec![(1, Dropped::Expired)]);
        assert_eq!(t.remove(&"b", t0 + S * 11), None);
        assert_eq!(t.take_dropped(), vec![(2, Dropped::Expired)]);
        t.insert("c", 3, t0, S);
        t.insert("c", 4, t0, S);
        assert!(
            t.take_dropped().is_empty(),
            "a replaced value is not dropped"
        );
        t.retain_keys(|k| *k != "c");
        assert_eq!(t.take_dropped(), vec![(4, Dropped::Cleared)]);
        let mut quiet = TtlTable::new(1);
        quiet.insert(1, (), t0, S);
        quiet.insert(2, (), t0, S);
        assert!(
            quiet.take_dropped().is_empty(),
            "non-reporting tables keep nothing"
        );
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
