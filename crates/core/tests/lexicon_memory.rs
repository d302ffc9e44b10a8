//! The built-in lexicon's memory: heap bytes live after building it once, counted by a
//! global allocator wrapper (its own test binary, so nothing else allocates meanwhile).
//! `cargo test -p elicitgate-core --test lexicon_memory -- --nocapture` prints the figure
//! docs/policy.md states; the test holds it under its bound.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use elicitgate_core::lexicon::SecretLexicon;

struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards every call to the system allocator unchanged; only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed through.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed through.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract is passed through.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Upper bound on the built lexicon's heap, in bytes.
const BOUND: isize = 30 << 20;

#[test]
fn the_builtin_lexicon_fits_its_memory_bound() {
    let before = LIVE.load(Ordering::Relaxed);
    let lexicon = SecretLexicon::build(&[]).expect("built-in lexicon builds");
    // The parsed word lists stay too (built once per process, shared by every policy).
    let live = LIVE.load(Ordering::Relaxed) - before;
    println!(
        "lexicon: {} terms, {:.1} MiB live after build",
        lexicon.len(),
        live as f64 / f64::from(1 << 20)
    );
    assert!(live > 0 && live < BOUND, "{live} bytes");
}
