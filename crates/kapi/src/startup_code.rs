//! The start-up code's pages released once the start is over, as Linux frees its `__init`
//! code after boot.
//!
//! A start runs some 1.7 MB of code that a started server does not run again: parsing the
//! flags, the PKI, building the catalogs and the bootstrap objects, assembling the server.
//! `tools/gen_link_order.py` lists those functions between [`kapi_startup_code_begin`] and
//! [`kapi_startup_code_end`], and `build.rs` has the linker place them in that order at the
//! start of the text. A second after the post-start hooks have finished, [`release_soon`]
//! tells the kernel that the process no longer needs those pages
//! (`madvise(MADV_DONTNEED)`): they leave its resident set and stay in the page cache, so a
//! function that does run again (on a path the traces did not take, or a resync loop's
//! next pass) is mapped back from there, as any code is the first time it runs.
//!
//! Only the `kapi` binary of a release build linked with that order (`build.rs` then sets
//! the `kapi_startup_code_packed` cfg, for every target of this package) releases anything:
//! elsewhere the markers bound code in no particular order, or nothing at all. A debugger's
//! breakpoint or a uprobe placed in the range before the release is dropped with the page
//! that holds it.

use std::ops::Range;

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

/// Keeps both markers in every build, packed or not, so that the link order can place them
/// and `tools/bench/text_pages.py` can find them.
#[used]
static MARKERS: [extern "C" fn() -> u32; 2] = [kapi_startup_code_begin, kapi_startup_code_end];

/// The whole pages of `page` bytes within `[begin, end)`, if any: the page holding `begin`
/// may hold code before it, and the one holding `end` the code after it.
pub fn whole_pages(begin: usize, end: usize, page: usize) -> Option<Range<usize>> {
    let (first, last) = (begin.next_multiple_of(page), end / page * page);
    (first < last).then_some(first..last)
}

/// Releases the pages of the code between the two markers a second from now, when this build
/// packed it there. Await it once the post-start hooks have finished.
pub async fn release_soon() {
    #[cfg(all(target_os = "linux", kapi_startup_code_packed))]
    {
        tokio::time::sleep(linux::RELEASE_DELAY).await;
        linux::release();
    }
}

#[cfg(all(target_os = "linux", kapi_startup_code_packed))]
mod linux {
    use std::time::Duration;

    use super::{MARKERS, whole_pages};

    /// How long after the start the pages are released. The start's last tasks (the tails
    /// of the post-start hooks, the controllers' first steps) run for some milliseconds
    /// after: released while they ran, the pages they run from were mapped back at once,
    /// each with its 64 KiB window (about 450 KiB; docs/PERFORMANCE.md).
    pub(super) const RELEASE_DELAY: Duration = Duration::from_secs(1);

    pub(super) fn release() {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let [begin, end] = MARKERS.map(|marker| marker as usize);
        let Some(pages) = whole_pages(begin, end, page) else {
            tracing::debug!(begin = format!("{begin:#x}"), "no start-up code to release");
            return;
        };
        let length = pages.end - pages.start;
        // SAFETY: the range holds whole pages between two functions of the binary's text:
        // a private, read-only mapping of the executable file, which has no text
        // relocations and which nothing writes. Dropping its pages loses nothing; the next
        // access maps them back from the file.
        let result = unsafe {
            libc::madvise(
                pages.start as *mut libc::c_void,
                length,
                libc::MADV_DONTNEED,
            )
        };
        if result == 0 {
            tracing::debug!(bytes = length, "released the start-up code's pages");
        } else {
            let err = std::io::Error::last_os_error();
            tracing::warn!(%err, "releasing the start-up code's pages");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::whole_pages;

    #[test]
    fn only_whole_pages_between_the_markers_are_released() {
        assert_eq!(whole_pages(0x1080, 0x5010, 0x1000), Some(0x2000..0x5000));
        assert_eq!(whole_pages(0x1000, 0x5000, 0x1000), Some(0x1000..0x5000));
        // Within one page, or in two neighbouring ones: nothing.
        assert_eq!(whole_pages(0x1080, 0x1f00, 0x1000), None);
        assert_eq!(whole_pages(0x1080, 0x2f00, 0x1000), None);
        // Markers out of order (a link order that did not place them): nothing.
        assert_eq!(whole_pages(0x5000, 0x1000, 0x1000), None);
    }
}
