//! The allocator's settings, chosen on measurements (docs/PERFORMANCE.md, "The allocator's
//! arenas" and "Footprint"):
//! - mimalloc commits its arenas lazily rather than eagerly. Eagerly committed arenas, with
//!   Linux's transparent huge pages, fault in 2 MiB pages where the server touches a few
//!   bytes: about 18 MiB more resident at idle, and no CPU saved.
//! - it gives freed pages back to the system at once rather than after 10 ms: 3–4 MiB less
//!   resident at idle, with no change in create, get, LIST or watch cost.
//!
//! The setting must be made before the first allocation reserves the first arena, which
//! Rust's runtime makes before `main`: the binary (and each benchmark) runs [`configure`]
//! from its `.init_array`, which the loader calls before the runtime starts:
//!
//! ```text
//! #[used]
//! #[unsafe(link_section = ".init_array")]
//! static CONFIGURE_ALLOCATOR: extern "C" fn() = kapi::allocator::configure;
//! ```

/// `mi_option_arena_eager_commit` and `mi_option_purge_delay` in mimalloc v3's
/// `mi_option_t` (mimalloc.h), which libmimalloc-sys leaves unnamed.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Makes mimalloc commit arenas lazily and purge at once. Runs before anything allocates
/// (see above).
pub extern "C" fn configure() {
    // SAFETY: mimalloc's option setter may be called at any time; this runs on the only
    // thread there is, before anything allocates through mimalloc.
    // Defaults only: `MIMALLOC_ARENA_EAGER_COMMIT` and `MIMALLOC_PURGE_DELAY` in the
    // environment still win.
    unsafe {
        libmimalloc_sys::mi_option_set_default(ARENA_EAGER_COMMIT, 0);
        libmimalloc_sys::mi_option_set_default(PURGE_DELAY, 0);
    }
}
