//! The allocator's settings, chosen on measurements (docs/PERFORMANCE.md, "The allocator's
//! arenas"): mimalloc commits its arenas lazily rather than eagerly. Eagerly committed
//! arenas, with Linux's transparent huge pages, fault in 2 MiB pages where the server
//! touches a few bytes: about 18 MiB more resident at idle, and no CPU saved.
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

/// `mi_option_arena_eager_commit` in mimalloc v3's `mi_option_t` (mimalloc.h), which
/// libmimalloc-sys leaves unnamed.
const ARENA_EAGER_COMMIT: libmimalloc_sys::mi_option_t = 4;

/// Makes mimalloc commit arenas lazily. Runs before anything allocates (see above).
pub extern "C" fn configure() {
    // SAFETY: mimalloc's option setter may be called at any time; this runs on the only
    // thread there is, before anything allocates through mimalloc.
    // The default only: `MIMALLOC_ARENA_EAGER_COMMIT` in the environment still wins.
    unsafe { libmimalloc_sys::mi_option_set_default(ARENA_EAGER_COMMIT, 0) };
}
