//! The start-up code's pages released once the server is ready, as Linux frees its `__init`
//! code after boot.
//!
//! A start runs some 1.7 MB of code that a ready server does not run again: parsing the
//! flags, the PKI, building the catalogs and the bootstrap objects, assembling the server.
//! `tools/gen_link_order.py` lists those functions between [`kapi_startup_code_begin`] and
//! [`kapi_startup_code_end`], and `build.rs` has the linker place them in that order at the
//! start of the text. A second after the server is ready, [`release_soon`] tells the kernel
//! that the process no longer needs those pages (`madvise(MADV_DONTNEED)`): they leave its resident
//! set and stay in the page cache, so a function that does run again (on a path the traces
//! did not take) is mapped back from there, as any code is the first time it runs.
//!
//! Builds that do not pack the start-up code (debug builds, other linkers, a link order
//! without the two markers) release nothing: the markers would then bound code in no
//! particular order.

use std::time::Duration;

/// Marks the start of the start-up code (see the module documentation). Its value is
/// meaningless; distinct from [`kapi_startup_code_end`]'s so the linker cannot fold the two.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn kapi_startup_code_begin() -> u32 {
    0x6b61_7069
}

/// Marks the end of the start-up code (see the module documentation).
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn kapi_startup_code_end() -> u32 {
    0x6b61_7070
}

/// Keeps both markers in every build, packed or not, so that `tools/gen_link_order.py`
/// finds them.
#[used]
static MARKERS: [extern "C" fn() -> u32; 2] = [kapi_startup_code_begin, kapi_startup_code_end];

/// How long after readiness the pages are released. The start's last tasks (the tails of
/// the post-start hooks, the controllers' first steps) run for some milliseconds after
/// `/readyz` first passes; released while they ran, the pages they run from would be mapped
/// back at once, each with its 64 KiB window.
const RELEASE_DELAY: Duration = Duration::from_secs(1);

/// Releases the pages of the code between the two markers, when this build packed it there,
/// [`RELEASE_DELAY`] from now. Call it once the server is ready.
pub async fn release_soon() {
    if cfg!(all(target_os = "linux", kapi_startup_code_packed)) {
        tokio::time::sleep(RELEASE_DELAY).await;
        #[cfg(all(target_os = "linux", kapi_startup_code_packed))]
        linux::release();
    }
}

#[cfg(all(target_os = "linux", kapi_startup_code_packed))]
mod linux {
    use super::MARKERS;

    /// More start-up code than this means the markers are not where the link order put
    /// them: release nothing.
    const MAX_BYTES: usize = 32 << 20;

    pub(super) fn release() {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let [begin, end] = MARKERS.map(|marker| marker as usize);
        let (begin, end) = (begin.next_multiple_of(page), end / page * page);
        if begin >= end || end - begin > MAX_BYTES {
            tracing::debug!(begin, end, "no start-up code to release");
            return;
        }
        // SAFETY: [begin, end) holds whole pages of the binary's text, between two of its
        // functions: a private, read-only mapping of the executable file, which no code
        // writes. Dropping its pages loses nothing; the next access maps them back from
        // the file.
        let result =
            unsafe { libc::madvise(begin as *mut libc::c_void, end - begin, libc::MADV_DONTNEED) };
        if result == 0 {
            tracing::debug!(bytes = end - begin, "released the start-up code's pages");
        } else {
            let err = std::io::Error::last_os_error();
            tracing::warn!(%err, "releasing the start-up code's pages");
        }
    }
}
