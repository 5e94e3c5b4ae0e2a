//! A small reader for the protobuf wire format: varints, fixed32/64,
//! length-delimited fields, and skipping fields it does not know.

pub(crate) const VARINT: u8 = 0;
pub(crate) const FIXED64: u8 = 1;
pub(crate) const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
pub(crate) const FIXED32: u8 = 5;

/// Nesting of groups we are willing to skip.
const MAX_GROUP_DEPTH: usize = 64;

/// Appends `v` as a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a length-delimited field's tag and length.
pub(crate) fn put_len_tag(out: &mut Vec<u8>, num: u32, len: usize) {
    put_varint(out, u64::from(num) << 3 | u64::from(LEN));
    put_varint(out, len as u64);
}

/// The size of `v` as a varint.
pub(crate) fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub(crate) fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub(crate) fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err("unexpected end of input in a varint".into());
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&end| end <= self.buf.len())
            .ok_or_else(|| {
                format!(
                    "unexpected end of input: {n} bytes announced, {} left",
                    self.buf.len() - self.pos
                )
            })?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    pub(crate) fn fixed64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    /// The payload of a length-delimited field.
    pub(crate) fn bytes(&mut self) -> Result<&'a [u8], String> {
        let len = self.varint()?;
        let len = usize::try_from(len).map_err(|_| format!("length {len} too large"))?;
        self.take(len)
    }

    /// The next field's number and wire type.
    pub(crate) fn tag(&mut self) -> Result<(u32, u8), String> {
        let key = self.varint()?;
        let wire_type = (key & 7) as u8;
        let num = key >> 3;
        if num == 0 || num > (1 << 29) - 1 {
            return Err(format!("illegal field number {num}"));
        }
        if wire_type == END_GROUP {
            return Err(format!("unexpected end-group for field {num}"));
        }
        if wire_type > FIXED32 {
            return Err(format!("illegal wire type {wire_type} for field {num}"));
        }
        Ok((num as u32, wire_type))
    }

    /// Skips the value of a field of `wire_type` whose tag was just read.
    pub(crate) fn skip(&mut self, num: u32, wire_type: u8) -> Result<(), String> {
        match wire_type {
            VARINT => self.varint().map(drop),
            FIXED64 => self.take(8).map(drop),
            LEN => self.bytes().map(drop),
            FIXED32 => self.take(4).map(drop),
            START_GROUP => self.skip_group(num, 1),
            _ => Err(format!("illegal wire type {wire_type} for field {num}")),
        }
    }

    fn skip_group(&mut self, num: u32, depth: usize) -> Result<(), String> {
        if depth > MAX_GROUP_DEPTH {
            return Err("groups nested too deep".into());
        }
        loop {
            if self.at_end() {
                return Err(format!("unexpected end of input in group {num}"));
            }
            let key = self.varint()?;
            let (inner, wire_type) = ((key >> 3) as u32, (key & 7) as u8);
            match wire_type {
                END_GROUP if inner == num => return Ok(()),
                END_GROUP => return Err(format!("end-group {inner} inside group {num}")),
                START_GROUP => self.skip_group(inner, depth + 1)?,
                _ => self.skip(inner, wire_type)?,
            }
        }
    }
}
