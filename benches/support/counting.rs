//! A counting global allocator, the benches' only unsafe code: live heap bytes for memory
//! per session (`sessions`), allocations per request for each layer of the pipeline
//! (`pipeline`). A bench opts in with
//! `#[global_allocator] static ALLOCATOR: Counting = Counting;`.
//!
//! Live bytes are counted only while switched on ([`count_live_bytes`]): a counter every
//! thread writes on every allocation is a contended cache line, which would slow the
//! latency figures down. Allocations are counted per thread, always, in a plain cell.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

pub struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static COUNTING_LIVE: AtomicBool = AtomicBool::new(false);

thread_local! {
    // No destructor, so the allocator's own bookkeeping allocates nothing.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// From now on, live heap bytes are counted.
pub fn count_live_bytes() {
    COUNTING_LIVE.store(true, Ordering::SeqCst);
}

/// The heap bytes allocated and not freed since counting began.
pub fn live_bytes() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// The allocations (reallocations included) this thread has made.
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

fn counted(grown: i64) {
    ALLOCATIONS.with(|n| n.set(n.get() + 1));
    if COUNTING_LIVE.load(Ordering::Relaxed) {
        LIVE.fetch_add(grown, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed on unchanged to the system allocator, which upholds
// `GlobalAlloc`'s contract; the counting beside it only reads the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted(layout.size() as i64);
        // SAFETY: the caller's layout, as `GlobalAlloc::alloc` received it.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING_LIVE.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        }
        // SAFETY: `ptr` came from the system allocator with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        counted(new_size as i64 - layout.size() as i64);
        // SAFETY: as `GlobalAlloc::realloc` received them, `ptr` from the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
