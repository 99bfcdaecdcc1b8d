//! The byte format of [`ShardStats`] (version 1), all integers and floats little-endian:
//!
//! ```text
//! magic     8 bytes  "HRSHARD\0"
//! version   u32      1
//! d1, d2    u64, u64
//! sections  u32      bit set of the sections present (see `section`)
//! n         u64      rows summed over
//! products  u64      number of Hessian-vector products k
//! clusters  u64      number of cluster ids G
//! nll       f64                         (VALUE)
//! grad      (d1 + d2) f64               (VALUE)
//! products  k (d1 + d2) f64             (either PRODUCTS bit)
//! expected  p (p + 1) / 2 f64, packed   (EXPECTED)
//! observed  p (p + 1) / 2 f64, packed   (OBSERVED)
//! meat      p (p + 1) / 2 f64, packed   (MEAT)
//! clusters  G x (id i64, (d1 + d2) f64), ids strictly increasing (CLUSTERS)
//! crc32     u32      CRC-32 of every byte before it
//! ```

use super::stats::{packed_len, section, Request, ShardStats, MAX_PARAMS};
use crate::error::{Error, Result};
use crate::likelihood::Curvature;
use crate::model::Params;

const MAGIC: &[u8; 8] = b"HRSHARD\0";
/// The format version written; the only one read.
pub(super) const VERSION: u32 = 1;
/// What errors name as the input.
const WHAT: &str = "<shard statistics>";
/// Bytes before the payload: magic, version, d1, d2, sections, n, products, clusters.
const HEADER: usize = 8 + 4 + 8 + 8 + 4 + 8 + 8 + 8;

fn bad(detail: impl Into<String>) -> Error {
    Error::format(WHAT, detail)
}

impl ShardStats {
    /// The statistics as bytes (see the format above), to move between processes.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let p = self.p();
        let floats = 1
            + self.grad.len()
            + self.products.len()
            + self.expected.len()
            + self.observed.len()
            + self.meat.len()
            + self.clusters.len() * (p + 1);
        let mut out = Vec::with_capacity(HEADER + 8 * floats + 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(self.d1 as u64).to_le_bytes());
        out.extend_from_slice(&(self.d2 as u64).to_le_bytes());
        out.extend_from_slice(&self.sections.to_le_bytes());
        out.extend_from_slice(&self.n.to_le_bytes());
        out.extend_from_slice(&(self.num_products() as u64).to_le_bytes());
        out.extend_from_slice(&(self.clusters.len() as u64).to_le_bytes());
        let mut put = |v: &[f64]| {
            for x in v {
                out.extend_from_slice(&x.to_le_bytes());
            }
        };
        if self.sections & section::VALUE != 0 {
            put(&[self.nll]);
        }
        put(&self.grad);
        put(&self.products);
        put(&self.expected);
        put(&self.observed);
        put(&self.meat);
        for (id, s) in &self.clusters {
            out.extend_from_slice(&id.to_le_bytes());
            for x in s {
                out.extend_from_slice(&x.to_le_bytes());
            }
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads statistics written by [`ShardStats::to_bytes`].
    ///
    /// Errors: [`Error::Format`] naming what is wrong — too short, not shard statistics (magic),
    /// another format version, a checksum mismatch (damaged bytes), unknown sections, a length
    /// that does not match the header, or cluster ids out of order.
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<ShardStats> {
        let mut r = Reader::open(bytes, MAGIC, HEADER, "shard statistics", &|d: &str| bad(d))?;
        let (d1, d2) = (r.u64(), r.u64());
        let sections = r.u32();
        let n = r.u64();
        let (k, g) = (r.u64(), r.u64());
        if sections & !section::ALL != 0 {
            return Err(bad(format!("unknown sections {sections:#x}")));
        }
        let both = section::OBSERVED_PRODUCTS | section::EXPECTED_PRODUCTS;
        if sections & both == both {
            return Err(bad("products of both curvatures in one message"));
        }
        let has = |flag: u32| sections & flag != 0;
        if (k > 0) != has(both) || (g > 0 && !has(section::CLUSTERS)) {
            return Err(bad(format!(
                "{k} products and {g} clusters do not match sections {sections:#x}"
            )));
        }
        // Every count is checked against the actual length before anything is allocated.
        let p = d1
            .checked_add(d2)
            .filter(|&p| (1..=MAX_PARAMS).contains(&p));
        let expect = p.and_then(|p| {
            let packed = p.checked_mul(p + 1)? / 2;
            let mut floats: u64 = 0;
            let mut add = |on: bool, m: u64| -> Option<()> {
                if on {
                    floats = floats.checked_add(m)?;
                }
                Some(())
            };
            add(has(section::VALUE), p + 1)?;
            add(has(both), k.checked_mul(p)?)?;
            add(has(section::EXPECTED), packed)?;
            add(has(section::OBSERVED), packed)?;
            add(has(section::MEAT), packed)?;
            add(has(section::CLUSTERS), g.checked_mul(p + 1)?)?;
            floats.checked_mul(8)?.checked_add(HEADER as u64 + 4)
        });
        if expect != Some(bytes.len() as u64) {
            return Err(bad(format!(
                "{} bytes do not match the header (d1 = {d1}, d2 = {d2}, {k} products, {g} clusters, sections {sections:#x})",
                bytes.len()
            )));
        }
        // Sizes fit in memory: they fit in the byte slice.
        let (d1, d2, k, g) = (d1 as usize, d2 as usize, k as usize, g as usize);
        let p = d1 + d2;
        let mut stats = ShardStats::empty(d1, d2, n);
        stats.sections = sections;
        if has(section::VALUE) {
            stats.nll = r.f64();
            stats.grad = r.f64s(p);
        }
        stats.products = r.f64s(k * p);
        let packed = packed_len(p);
        if has(section::EXPECTED) {
            stats.expected = r.f64s(packed);
        }
        if has(section::OBSERVED) {
            stats.observed = r.f64s(packed);
        }
        if has(section::MEAT) {
            stats.meat = r.f64s(packed);
        }
        let mut last = None;
        for _ in 0..g {
            let id = r.u64() as i64;
            if last.is_some_and(|l| l >= id) {
                return Err(bad(format!(
                    "cluster id {id} out of order (ids must be strictly increasing)"
                )));
            }
            last = Some(id);
            stats.clusters.insert(id, r.f64s(p));
        }
        Ok(stats)
    }
}

const REQUEST_MAGIC: &[u8; 8] = b"HRSHREQ\0";
/// Bytes before a request's payload: magic, version, d1, d2, sections, products.
const REQUEST_HEADER: usize = 8 + 4 + 8 + 8 + 4 + 8;
/// What request errors name as the input.
const REQUEST_WHAT: &str = "<shard request>";

impl Request {
    /// The sections this request asks for (the bits of [`ShardStats`]' wire format; also the
    /// C API's `HETREWARD_SHARD_*` values).
    pub(crate) fn sections(&self) -> u32 {
        let products = match self.curvature {
            Curvature::Observed => section::OBSERVED_PRODUCTS,
            Curvature::Expected => section::EXPECTED_PRODUCTS,
        };
        [
            (self.value, section::VALUE),
            (!self.products.is_empty(), products),
            (self.expected, section::EXPECTED),
            (self.observed, section::OBSERVED),
            (self.meat, section::MEAT),
            (self.clusters, section::CLUSTERS),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .fold(0, |s, (_, flag)| s | flag)
    }

    /// The request as bytes, for a driver to send to its workers (format version 1, all
    /// little-endian): magic `HRSHREQ\0`, version u32, d1 u64, d2 u64, sections u32, the
    /// number of product vectors k u64, theta (d1 f64), gamma (d2 f64), the vectors
    /// (k (d1 + d2) f64, row by row), CRC-32 of every byte before it.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let (d1, d2) = (self.params.theta.len(), self.params.gamma.len());
        let floats = d1 + d2 + self.products.len() * (d1 + d2);
        let mut out = Vec::with_capacity(REQUEST_HEADER + 8 * floats + 4);
        out.extend_from_slice(REQUEST_MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&(d1 as u64).to_le_bytes());
        out.extend_from_slice(&(d2 as u64).to_le_bytes());
        out.extend_from_slice(&self.sections().to_le_bytes());
        out.extend_from_slice(&(self.products.len() as u64).to_le_bytes());
        let all = self.params.theta.iter().chain(&self.params.gamma);
        for x in all.chain(self.products.iter().flatten()) {
            out.extend_from_slice(&x.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Reads a request written by [`Request::to_bytes`].
    ///
    /// Errors: [`Error::Format`] naming what is wrong — too short, not a request (magic),
    /// another format version, a checksum mismatch, unknown or contradictory sections,
    /// product vectors without a product section (or the reverse), a length that does not
    /// match the header. (Values are checked where they are used: [`ShardStats::compute`].)
    pub(crate) fn from_bytes(bytes: &[u8]) -> Result<Request> {
        let bad = |detail: String| Error::format(REQUEST_WHAT, detail);
        let mut r = Reader::open(
            bytes,
            REQUEST_MAGIC,
            REQUEST_HEADER,
            "a shard request",
            &|d: &str| bad(d.to_string()),
        )?;
        let (d1, d2) = (r.u64(), r.u64());
        let sections = r.u32();
        let k = r.u64();
        if sections & !section::ALL != 0 {
            return Err(bad(format!("unknown sections {sections:#x}")));
        }
        let both = section::OBSERVED_PRODUCTS | section::EXPECTED_PRODUCTS;
        if sections & both == both {
            return Err(bad("products of both curvatures in one request".into()));
        }
        if (k > 0) != (sections & both != 0) {
            return Err(bad(format!(
                "{k} product vectors do not match sections {sections:#x}"
            )));
        }
        let expect = d1
            .checked_add(d2)
            .filter(|&p| (1..=MAX_PARAMS).contains(&p))
            .and_then(|p| p.checked_mul(k.checked_add(1)?))
            .and_then(|floats| {
                floats
                    .checked_mul(8)?
                    .checked_add(REQUEST_HEADER as u64 + 4)
            });
        if expect != Some(bytes.len() as u64) {
            return Err(bad(format!(
                "{} bytes do not match the header (d1 = {d1}, d2 = {d2}, {k} product vectors)",
                bytes.len()
            )));
        }
        // Sizes fit in memory: they fit in the byte slice.
        let (d1, d2, k) = (d1 as usize, d2 as usize, k as usize);
        let params = Params {
            theta: r.f64s(d1),
            gamma: r.f64s(d2),
        };
        let mut request = Request::at(params);
        request.value = sections & section::VALUE != 0;
        request.curvature = if sections & section::OBSERVED_PRODUCTS != 0 {
            Curvature::Observed
        } else {
            Curvature::Expected
        };
        request.products = (0..k).map(|_| r.f64s(d1 + d2)).collect();
        request.expected = sections & section::EXPECTED != 0;
        request.observed = sections & section::OBSERVED != 0;
        request.meat = sections & section::MEAT != 0;
        request.clusters = sections & section::CLUSTERS != 0;
        Ok(request)
    }
}

/// Little-endian reads at a cursor whose bounds were checked beforehand.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// Checks the envelope every versioned byte format here shares — at least `header` bytes
    /// plus the CRC-32, the `magic`, [`VERSION`], the checksum of everything before it — and
    /// returns a reader positioned after the version. `what` names the format in the
    /// wrong-magic message; `bad` turns a detail into the caller's error.
    fn open(
        bytes: &'a [u8],
        magic: &[u8; 8],
        header: usize,
        what: &str,
        bad: &dyn Fn(&str) -> Error,
    ) -> Result<Self> {
        if bytes.len() < header + 4 {
            return Err(bad(&format!(
                "{} bytes is shorter than the {}-byte header and checksum",
                bytes.len(),
                header + 4
            )));
        }
        if &bytes[..8] != magic {
            return Err(bad(&format!("not {what} (bad magic bytes)")));
        }
        let mut r = Reader { bytes, at: 8 };
        let version = r.u32();
        if version != VERSION {
            return Err(bad(&format!(
                "format version {version}; this library reads version {VERSION}"
            )));
        }
        let (body, tail) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_le_bytes(tail.try_into().expect("4 bytes"));
        let computed = crc32fast::hash(body);
        if stored != computed {
            return Err(bad(&format!(
                "checksum mismatch (stored {stored:#010x}, computed {computed:#010x}): the bytes are damaged or truncated"
            )));
        }
        Ok(r)
    }

    fn take<const N: usize>(&mut self) -> [u8; N] {
        let out = self.bytes[self.at..self.at + N]
            .try_into()
            .expect("length checked");
        self.at += N;
        out
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    fn f64(&mut self) -> f64 {
        f64::from_le_bytes(self.take())
    }
    fn f64s(&mut self, m: usize) -> Vec<f64> {
        (0..m).map(|_| self.f64()).collect()
    }
}
