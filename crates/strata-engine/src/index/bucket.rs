//! `Bucket`: one key and its cell in 32 bytes, the unit of a `KeyMap`.
//!
//! Layout (x86-64, `repr(C)`, 8-aligned):
//!
//! | bytes | holds |
//! |---|---|
//! | 0..16 | the key's bytes if it is 16 bytes or shorter; else a pointer to them on the heap and their length |
//! | 16..31 | the cell: a packed cold entry's 15 bytes (`cell.rs`), or a pointer to its boxed `Entry` or `Ext` |
//! | 31 | meta: the inline key's length (bits 0..5), "key on the heap" (bit 5), the cell's form (bits 6..8) |
//!
//! A cold key of up to 16 bytes (redis-benchmark's `key:000000000123`,
//! memtier's `memtier-1234567`) thus costs 32 bytes here, where a 24-byte
//! key holder and a 16-byte enum cell cost 40. A longer key costs a heap
//! allocation of its length (jemalloc rounds 17–32 bytes to 32).
//!
//! Invariants:
//! 1. A bucket owns what its pointers point at, exactly once: the key's
//!    heap bytes (`Box<[u8]>`) when the heap bit is set, and the boxed
//!    `Entry` or `Ext` its form names. Dropping the bucket frees them;
//!    cloning copies them.
//! 2. A key is on the heap iff it is longer than [`INLINE_KEY`] bytes.
//! 3. Every byte of a bucket is initialised, whatever its form.

use super::cell::{Cell, EntryRef, Ext, Kind};
use super::{Entry, Key};

/// Longest key held inside its bucket (`CompactKey`'s limit too, so a
/// key owns heap bytes in both or in neither).
const INLINE_KEY: usize = super::key::INLINE_MAX;

const LEN_MASK: u8 = 0x1f;
const HEAP: u8 = 0x20;
const FORM_SHIFT: u32 = 6;
const PACKED: u8 = 0;
const FULL: u8 = 1;
const EXT: u8 = 2;

#[repr(C, align(8))]
pub struct Bucket {
    key: KeyBytes,
    tail: Tail,
}

const _: () = assert!(std::mem::size_of::<Bucket>() == 32);

#[repr(C)]
#[derive(Clone, Copy)]
union KeyBytes {
    inline: [u8; INLINE_KEY],
    heap: HeapKey,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct HeapKey {
    ptr: *mut u8,
    len: usize,
}

/// The cell and the meta byte, which is byte 15 in either view.
#[repr(C)]
#[derive(Clone, Copy)]
union Tail {
    packed: [u8; 16],
    boxed: Boxed,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Boxed {
    ptr: *mut u8,
    _pad: [u8; 7],
    meta: u8,
}

// SAFETY: a bucket owns its key bytes and its boxed entry outright
// (invariant 1), as a `Box<[u8]>` and a `Box<Entry>` would; both are Send
// and Sync.
unsafe impl Send for Bucket {}
unsafe impl Sync for Bucket {}

impl Bucket {
    pub(super) fn new(key: Key, cell: Cell) -> Bucket {
        let key = if key.len() <= INLINE_KEY {
            let mut inline = [0u8; INLINE_KEY];
            inline[..key.len()].copy_from_slice(&key);
            (KeyBytes { inline }, key.len() as u8)
        } else {
            let b: Box<[u8]> = match key {
                Key::Heap(b) => b,
                k => Box::from(&k[..]),
            };
            let len = b.len();
            let ptr = Box::into_raw(b) as *mut u8;
            (
                KeyBytes {
                    heap: HeapKey { ptr, len },
                },
                HEAP,
            )
        };
        let mut b = Bucket {
            key: key.0,
            tail: Tail { packed: [0; 16] },
        };
        b.set_meta(key.1);
        b.put(cell);
        b
    }

    fn meta(&self) -> u8 {
        // SAFETY: byte 15 is the meta byte in either view (invariant 3).
        unsafe { self.tail.packed[15] }
    }

    fn set_meta(&mut self, m: u8) {
        // SAFETY: as in `meta`; every byte stays initialised.
        unsafe { self.tail.packed[15] = m }
    }

    fn form(&self) -> u8 {
        self.meta() >> FORM_SHIFT
    }

    fn ptr(&self) -> *mut u8 {
        // SAFETY: read only for a boxed form, whose tail was written as
        // `Boxed`.
        unsafe { self.tail.boxed.ptr }
    }

    pub(super) fn key(&self) -> &[u8] {
        let m = self.meta();
        // SAFETY: the heap bit says which view was written; a heap key's
        // pointer and length are those of a live `Box<[u8]>` (invariant 1).
        unsafe {
            if m & HEAP != 0 {
                std::slice::from_raw_parts(self.key.heap.ptr, self.key.heap.len)
            } else {
                &self.key.inline[..(m & LEN_MASK) as usize]
            }
        }
    }

    pub(super) fn kind(&self) -> Kind {
        match self.form() {
            FULL => Kind::Full,
            EXT => Kind::Ext,
            _ => Kind::Packed,
        }
    }

    pub(super) fn is_full(&self) -> bool {
        self.form() == FULL
    }

    /// The boxed entry, if the cell is boxed whole.
    pub(super) fn full(&self) -> Option<&Entry> {
        // SAFETY: a `FULL` cell's pointer is a live `Box<Entry>` this
        // bucket owns (invariant 1).
        (self.form() == FULL).then(|| unsafe { &*(self.ptr() as *const Entry) })
    }

    pub(super) fn full_mut(&mut self) -> Option<&mut Entry> {
        // SAFETY: as in `full`, borrowed mutably through `&mut self`.
        (self.form() == FULL).then(|| unsafe { &mut *(self.ptr() as *mut Entry) })
    }

    /// The entry, borrowed if boxed, rebuilt if packed.
    pub(super) fn entry(&self) -> EntryRef<'_> {
        let key_len = self.key().len();
        match self.form() {
            // SAFETY: see `full`; an `EXT` pointer is a live `Box<Ext>`.
            FULL => EntryRef::Borrowed(unsafe { &*(self.ptr() as *const Entry) }),
            EXT => EntryRef::Owned(unsafe { &*(self.ptr() as *const Ext) }.unpack(key_len)),
            _ => EntryRef::Owned(super::cell::unpack(key_len, &self.packed())),
        }
    }

    fn packed(&self) -> [u8; 15] {
        let mut p = [0u8; 15];
        // SAFETY: read only for a packed form (every byte initialised).
        p.copy_from_slice(unsafe { &self.tail.packed[..15] });
        p
    }

    /// The entry, boxed first if packed (the caller may change anything).
    /// Returns the form it had.
    pub(super) fn entry_mut(&mut self) -> (&mut Entry, Kind) {
        let (_, e, was) = self.key_entry_mut();
        (e, was)
    }

    /// `entry_mut`, with the key beside it.
    pub(super) fn key_entry_mut(&mut self) -> (&[u8], &mut Entry, Kind) {
        let was = self.kind();
        if was != Kind::Full {
            let key_len = self.key().len();
            let mut c = self.take();
            c.entry_mut(key_len);
            self.put(c);
        }
        // SAFETY: the cell is boxed whole now, so its pointer is a live
        // `Box<Entry>` this bucket owns (invariant 1): a separate
        // allocation, which the key's bytes (here or on the heap) never
        // overlap; both borrows last as long as `&mut self`.
        let e = unsafe { &mut *(self.ptr() as *mut Entry) };
        (self.key(), e, was)
    }

    /// Packs a boxed entry if it can be; returns the form it took.
    pub(super) fn try_pack(&mut self) -> Kind {
        if self.form() != FULL {
            return self.kind();
        }
        let key_len = self.key().len();
        let mut c = self.take();
        let k = c.try_pack(key_len);
        self.put(c);
        k
    }

    /// Puts `cell` in, returning the one it replaces.
    pub(super) fn replace(&mut self, cell: Cell) -> Cell {
        let old = self.take();
        self.put(cell);
        old
    }

    /// The key and the cell, owned.
    pub(super) fn into_parts(mut self) -> (Key, Cell) {
        let cell = self.take();
        let m = self.meta();
        let key = if m & HEAP != 0 {
            // SAFETY: a heap key is a live `Box<[u8]>` this bucket owns;
            // the meta is cleared below so the drop does not free it again.
            let b = unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.key.heap.ptr,
                    self.key.heap.len,
                ))
            };
            Key::Heap(b)
        } else {
            Key::from(self.key())
        };
        self.set_meta(PACKED << FORM_SHIFT);
        (key, cell)
    }

    /// Takes the cell out, leaving an empty packed one (no owner of any
    /// box: invariant 1 holds for the caller, who now owns the cell).
    fn take(&mut self) -> Cell {
        let m = self.meta();
        let ptr = self.ptr();
        // SAFETY: the form says which box the pointer is (invariant 1);
        // the form is set to packed before anything else reads the cell.
        let c = unsafe {
            match m >> FORM_SHIFT {
                FULL => Cell::Full(Box::from_raw(ptr as *mut Entry)),
                EXT => Cell::Ext(Box::from_raw(ptr as *mut Ext)),
                _ => Cell::Packed(self.packed()),
            }
        };
        self.tail = Tail { packed: [0; 16] };
        self.set_meta(m & !(3 << FORM_SHIFT));
        c
    }

    /// Writes `cell` into an emptied cell (`take`).
    fn put(&mut self, cell: Cell) {
        let keep = self.meta() & !(3 << FORM_SHIFT);
        let (form, ptr) = match cell {
            Cell::Packed(p) => {
                let mut packed = [0u8; 16];
                packed[..15].copy_from_slice(&p);
                packed[15] = keep;
                self.tail = Tail { packed };
                return;
            }
            Cell::Full(e) => (FULL, Box::into_raw(e) as *mut u8),
            Cell::Ext(x) => (EXT, Box::into_raw(x) as *mut u8),
        };
        self.tail = Tail {
            boxed: Boxed {
                ptr,
                _pad: [0; 7],
                meta: keep | form << FORM_SHIFT,
            },
        };
    }

    fn cell_clone(&self) -> Cell {
        match self.form() {
            FULL => Cell::Full(Box::new(self.full().expect("full").clone())),
            // SAFETY: see `entry`.
            EXT => Cell::Ext(Box::new(unsafe { &*(self.ptr() as *const Ext) }.clone())),
            _ => Cell::Packed(self.packed()),
        }
    }
}

impl Drop for Bucket {
    fn drop(&mut self) {
        drop(self.take());
        if self.meta() & HEAP != 0 {
            // SAFETY: invariant 1; the bucket is not used after this.
            unsafe {
                drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.key.heap.ptr,
                    self.key.heap.len,
                )))
            };
        }
    }
}

impl Clone for Bucket {
    fn clone(&self) -> Bucket {
        Bucket::new(Key::from(self.key()), self.cell_clone())
    }
}

impl std::fmt::Debug for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:?} => {:?}",
            String::from_utf8_lossy(self.key()),
            self.entry()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FlashLoc, Hot, Slot, Value};
    use super::*;
    use crate::flash::format::RECORD_HEADER_LEN;

    fn entry(key_len: usize, hot: bool, ttl: u64) -> Entry {
        Entry {
            slot: if hot {
                Slot::Hot(Hot::new(
                    Value::Str(bytes::Bytes::from_static(b"hello")),
                    None,
                ))
            } else {
                Slot::Cold(FlashLoc {
                    segment: 7,
                    offset: 4096,
                    len: (RECORD_HEADER_LEN + key_len + 5) as u32,
                })
            },
            expire_at_ms: ttl,
            version: 42,
            lru_secs: 0,
            lfu: 0,
            flags: 0,
            value_len: 5,
            client_flags: 0,
            vtype: 0,
        }
    }

    fn show(e: &Entry) -> String {
        format!("{e:?}")
    }

    /// Every key length either side of the inline limit, with every
    /// form of cell: the key and the entry read back as they went in,
    /// through clone, change of form and taking apart.
    #[test]
    fn keys_and_cells_read_back_in_every_form() {
        for len in [0, 1, 15, 16, 17, 22, 23, 100] {
            let key: Vec<u8> = (0..len as u8).map(|i| i.wrapping_mul(37)).collect();
            for (hot, ttl, kind) in [
                (true, 0, Kind::Full),
                (false, 0, Kind::Packed),
                (false, 99, Kind::Ext),
            ] {
                let e = entry(len, hot, ttl);
                let b = Bucket::new(Key::from(&key[..]), Cell::new(len, e.clone()));
                assert_eq!(b.key(), &key[..]);
                assert_eq!(b.kind(), kind, "len {len}");
                assert_eq!(show(&b.entry()), show(&e));
                let mut c = b.clone();
                drop(b);
                assert_eq!(c.key(), &key[..]);
                let (k, m, was) = c.key_entry_mut();
                assert_eq!(was, kind);
                m.version += 1;
                assert_eq!(k, &key[..]);
                assert!(c.is_full());
                assert_eq!(c.try_pack(), kind);
                assert_eq!(c.entry().version, 43);
                let old = c.replace(Cell::new(len, entry(len, true, 0)));
                assert_eq!(old.into_entry(len).version, 43);
                assert!(c.full().is_some());
                let (k, cell) = c.into_parts();
                assert_eq!(&k[..], &key[..]);
                assert_eq!(cell.kind(), Kind::Full);
            }
        }
    }
}
