//! Redis's geohash arithmetic (geohash.c, geohash_helper.c of redis-server
//! 7.0), reproduced operation by operation so that scores, positions,
//! distances and the boxes a search scans are bit-identical to Redis's.
//!
//! A position is a 52-bit interleaved geohash (26 bits of latitude in the
//! even bits, 26 of longitude in the odd ones) over longitudes −180..180
//! and latitudes ±85.05112878 (Web Mercator's limits); the sorted set keeps
//! it as the member's score.

pub const LONG_MIN: f64 = -180.0;
pub const LONG_MAX: f64 = 180.0;
pub const LAT_MIN: f64 = -85.05112878;
pub const LAT_MAX: f64 = 85.05112878;
/// Bits per coordinate of a stored position.
pub const STEP_MAX: u8 = 26;
const EARTH_RADIUS_IN_METERS: f64 = 6372797.560856;
const MERCATOR_MAX: f64 = 20037726.37;
const D_R: f64 = std::f64::consts::PI / 180.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Bits {
    pub bits: u64,
    pub step: u8,
}

impl Bits {
    /// Redis's `HASHISZERO`: a neighbour excluded from a search.
    pub fn is_zero(&self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

#[derive(Clone, Copy, Debug, Default)]
struct Range {
    min: f64,
    max: f64,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct Area {
    lon: Range,
    lat: Range,
}

fn deg_rad(a: f64) -> f64 {
    a * D_R
}
fn rad_deg(a: f64) -> f64 {
    a / D_R
}

fn interleave64(xlo: u32, ylo: u32) -> u64 {
    const B: [u64; 5] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
    ];
    const S: [u32; 5] = [1, 2, 4, 8, 16];
    let (mut x, mut y) = (xlo as u64, ylo as u64);
    for i in (0..5).rev() {
        x = (x | (x << S[i])) & B[i];
        y = (y | (y << S[i])) & B[i];
    }
    x | (y << 1)
}

fn deinterleave64(v: u64) -> u64 {
    const B: [u64; 6] = [
        0x5555555555555555,
        0x3333333333333333,
        0x0F0F0F0F0F0F0F0F,
        0x00FF00FF00FF00FF,
        0x0000FFFF0000FFFF,
        0x00000000FFFFFFFF,
    ];
    const S: [u32; 6] = [0, 1, 2, 4, 8, 16];
    let (mut x, mut y) = (v, v >> 1);
    for i in 0..6 {
        x = (x | (x >> S[i])) & B[i];
        y = (y | (y >> S[i])) & B[i];
    }
    x | (y << 32)
}

const WGS84: (Range, Range) = (
    Range {
        min: LONG_MIN,
        max: LONG_MAX,
    },
    Range {
        min: LAT_MIN,
        max: LAT_MAX,
    },
);

fn encode_in(lon_r: Range, lat_r: Range, lon: f64, lat: f64, step: u8) -> Option<Bits> {
    if !(LONG_MIN..=LONG_MAX).contains(&lon)
        || !(LAT_MIN..=LAT_MAX).contains(&lat)
        || lat < lat_r.min
        || lat > lat_r.max
        || lon < lon_r.min
        || lon > lon_r.max
    {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_off = (lat - lat_r.min) / (lat_r.max - lat_r.min) * scale;
    let lon_off = (lon - lon_r.min) / (lon_r.max - lon_r.min) * scale;
    // C converts the offsets to uint32_t (truncation; 2^step at most).
    Some(Bits {
        bits: interleave64(lat_off as u64 as u32, lon_off as u64 as u32),
        step,
    })
}

/// The geohash of a position (None outside the valid ranges).
pub fn encode(lon: f64, lat: f64, step: u8) -> Option<Bits> {
    encode_in(WGS84.0, WGS84.1, lon, lat, step)
}

/// A position's score: its 52-bit geohash.
pub fn score_of(lon: f64, lat: f64) -> Option<u64> {
    encode(lon, lat, STEP_MAX).map(align52)
}

fn decode_in(lon_r: Range, lat_r: Range, h: Bits) -> Area {
    let sep = deinterleave64(h.bits);
    let ilat = sep as u32 as f64;
    let ilon = (sep >> 32) as u32 as f64;
    let div = (1u64 << h.step) as f64;
    let (lat_scale, lon_scale) = (lat_r.max - lat_r.min, lon_r.max - lon_r.min);
    Area {
        lat: Range {
            min: lat_r.min + (ilat / div) * lat_scale,
            max: lat_r.min + ((ilat + 1.0) / div) * lat_scale,
        },
        lon: Range {
            min: lon_r.min + (ilon / div) * lon_scale,
            max: lon_r.min + ((ilon + 1.0) / div) * lon_scale,
        },
    }
}

fn decode(h: Bits) -> Area {
    decode_in(WGS84.0, WGS84.1, h)
}

/// C's `(uint64_t)` of a double as gcc compiles it on x86-64 (scores that
/// are not geohashes still decode, as in Redis).
fn c_double_to_u64(d: f64) -> u64 {
    const TWO63: f64 = 9223372036854775808.0;
    let cvtt = |v: f64| -> u64 {
        // cvttsd2si: out of range or NaN gives the "integer indefinite".
        if v.is_nan() || !(-TWO63..TWO63).contains(&v) {
            0x8000_0000_0000_0000
        } else {
            v as i64 as u64
        }
    };
    if d < TWO63 {
        cvtt(d)
    } else {
        cvtt(d - TWO63) ^ 0x8000_0000_0000_0000
    }
}

/// The position a score stands for (the centre of its cell, clamped).
pub fn decode_score(score: f64) -> (f64, f64) {
    let a = decode(Bits {
        bits: c_double_to_u64(score),
        step: STEP_MAX,
    });
    let lon = ((a.lon.min + a.lon.max) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((a.lat.min + a.lat.max) / 2.0).clamp(LAT_MIN, LAT_MAX);
    (lon, lat)
}

/// GEOHASH's 11-character standard geohash of a score.
pub fn geohash_string(score: f64) -> [u8; 11] {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (lon, lat) = decode_score(score);
    let std = (
        Range {
            min: -180.0,
            max: 180.0,
        },
        Range {
            min: -90.0,
            max: 90.0,
        },
    );
    let bits = encode_in(std.0, std.1, lon, lat, 26).map_or(0, |h| h.bits);
    let mut out = [b'0'; 11];
    for (i, c) in out.iter_mut().enumerate().take(10) {
        *c = ALPHABET[((bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    out
}

pub fn align52(h: Bits) -> u64 {
    h.bits << (52 - h.step as u32 * 2)
}

const ODD: u64 = 0xaaaaaaaaaaaaaaaa; // longitude bits
const EVEN: u64 = 0x5555555555555555; // latitude bits

/// Redis's `geohash_move_x` (`axis` = ODD) and `geohash_move_y` (EVEN):
/// adds `d` (±1) to one coordinate of the interleaved cell, carrying
/// through the other coordinate's bits.
fn step_axis(h: &mut Bits, axis: u64, d: i8) {
    let s = 64 - h.step as u32 * 2;
    let mut a = h.bits & axis;
    let other = h.bits & !axis;
    let zz = (!axis).checked_shr(s).unwrap_or(0);
    if d > 0 {
        a = a.wrapping_add(zz + 1);
    } else {
        a |= zz;
        a = a.wrapping_sub(zz + 1);
    }
    a &= axis.checked_shr(s).unwrap_or(0);
    h.bits = a | other;
}

/// A cell moved by (dx, dy) cells (east and north are positive).
fn neighbour(h: Bits, dx: i8, dy: i8) -> Bits {
    let mut n = h;
    if dx != 0 {
        step_axis(&mut n, ODD, dx);
    }
    if dy != 0 {
        step_axis(&mut n, EVEN, dy);
    }
    n
}

/// Great-circle distance in meters (Redis 7.0's haversine).
pub fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let (lat1r, lon1r, lat2r, lon2r) = (deg_rad(lat1), deg_rad(lon1), deg_rad(lat2), deg_rad(lon2));
    let u = ((lat2r - lat1r) / 2.0).sin();
    let v = ((lon2r - lon1r) / 2.0).sin();
    2.0 * EARTH_RADIUS_IN_METERS * (u * u + lat1r.cos() * lat2r.cos() * v * v).sqrt().asin()
}

/// What a search covers, in meters (a unit's conversion already applied
/// by the caller through `conversion`).
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    Radius(f64),
    Box { width: f64, height: f64 },
}

#[derive(Clone, Copy, Debug)]
pub struct Search {
    pub lon: f64,
    pub lat: f64,
    pub shape: Shape,
    /// Meters per unit of the query.
    pub conversion: f64,
}

impl Search {
    /// The distance of a point from the centre if it is inside the shape
    /// (Redis's `geoWithinShape`).
    pub fn within(&self, lon: f64, lat: f64) -> Option<f64> {
        match self.shape {
            Shape::Radius(r) => {
                let d = distance(self.lon, self.lat, lon, lat);
                (d <= r * self.conversion).then_some(d)
            }
            Shape::Box { width, height } => {
                let (w, h) = (width * self.conversion, height * self.conversion);
                let lon_d = distance(lon, lat, self.lon, lat);
                let lat_d = distance(lon, lat, lon, self.lat);
                if lon_d > w / 2.0 || lat_d > h / 2.0 {
                    return None;
                }
                Some(distance(self.lon, self.lat, lon, lat))
            }
        }
    }

    /// Bounding box: [min lon, min lat, max lon, max lat].
    fn bounds(&self) -> [f64; 4] {
        let (h, w) = match self.shape {
            Shape::Radius(r) => (r, r),
            Shape::Box { width, height } => (height / 2.0, width / 2.0),
        };
        let (h, w) = (h * self.conversion, w * self.conversion);
        let lat_delta = rad_deg(h / EARTH_RADIUS_IN_METERS);
        let lon_delta_top =
            rad_deg(w / EARTH_RADIUS_IN_METERS / deg_rad(self.lat + lat_delta).cos());
        let lon_delta_bottom =
            rad_deg(w / EARTH_RADIUS_IN_METERS / deg_rad(self.lat - lat_delta).cos());
        let south = self.lat < 0.0;
        let d = if south {
            lon_delta_bottom
        } else {
            lon_delta_top
        };
        [
            self.lon - d,
            self.lat - lat_delta,
            self.lon + d,
            self.lat + lat_delta,
        ]
    }

    /// The cells to scan, in Redis's order (centre, N, S, E, W, NE, NW, SE,
    /// SW), excluded ones zeroed (`geohashCalculateAreasByShapeWGS84`).
    pub fn cells(&self) -> [Bits; 9] {
        let b = self.bounds();
        let (min_lon, min_lat, max_lon, max_lat) = (b[0], b[1], b[2], b[3]);
        let radius = match self.shape {
            Shape::Radius(r) => r,
            Shape::Box { width, height } => {
                ((width / 2.0) * (width / 2.0) + (height / 2.0) * (height / 2.0)).sqrt()
            }
        } * self.conversion;
        let mut steps = estimate_steps(radius, self.lat);
        let mut hash = encode(self.lon, self.lat, steps).unwrap_or_default();
        let around = |h: Bits| {
            [
                neighbour(h, 0, 1),
                neighbour(h, 0, -1),
                neighbour(h, 1, 0),
                neighbour(h, -1, 0),
                neighbour(h, 1, 1),
                neighbour(h, -1, 1),
                neighbour(h, 1, -1),
                neighbour(h, -1, -1),
            ]
        };
        let mut n = around(hash);
        let (north, south, east, west) = (decode(n[0]), decode(n[1]), decode(n[2]), decode(n[3]));
        let decrease = north.lat.max < max_lat
            || south.lat.min > min_lat
            || east.lon.max < max_lon
            || west.lon.min > min_lon;
        if steps > 1 && decrease {
            steps -= 1;
            hash = encode(self.lon, self.lat, steps).unwrap_or_default();
            n = around(hash);
        }
        let area = decode(hash);
        // [N, S, E, W, NE, NW, SE, SW]
        if steps >= 2 {
            let zero = |n: &mut [Bits; 8], idx: &[usize]| {
                for &i in idx {
                    n[i] = Bits::default();
                }
            };
            if area.lat.min < min_lat {
                zero(&mut n, &[1, 7, 6]);
            }
            if area.lat.max > max_lat {
                zero(&mut n, &[0, 4, 5]);
            }
            if area.lon.min < min_lon {
                zero(&mut n, &[3, 7, 5]);
            }
            if area.lon.max > max_lon {
                zero(&mut n, &[2, 6, 4]);
            }
        }
        [hash, n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]]
    }
}

fn estimate_steps(range_meters: f64, lat: f64) -> u8 {
    if range_meters == 0.0 {
        return 26;
    }
    let mut r = range_meters;
    let mut step: i32 = 1;
    while r < MERCATOR_MAX {
        r *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, 26) as u8
}

/// The score range [min, max) of the positions inside a cell.
pub fn cell_scores(h: Bits) -> (f64, f64) {
    let min = align52(h);
    let max = align52(Bits {
        bits: h.bits + 1,
        step: h.step,
    });
    (min as f64, max as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palermo_as_redis_encodes_and_decodes_it() {
        // GEOADD Sicily 13.361389 38.115556 Palermo; ZSCORE -> 3479099956230698
        assert_eq!(score_of(13.361389, 38.115556), Some(3479099956230698));
        let (lon, lat) = decode_score(3479099956230698.0);
        assert_eq!(format!("{lon:.17}"), "13.36138933897018433");
        assert_eq!(format!("{lat:.17}"), "38.11555639549629859");
        assert_eq!(&geohash_string(3479099956230698.0), b"sqc8b49rny0");
    }

    #[test]
    fn palermo_catania_distance_is_redis_s() {
        let p = decode_score(3479099956230698.0);
        let c = decode_score(score_of(15.087269, 37.502669).unwrap() as f64);
        assert_eq!(
            format!("{:.4}", distance(p.0, p.1, c.0, c.1)),
            "166274.1516"
        );
    }

    #[test]
    fn out_of_range_positions_do_not_encode() {
        assert_eq!(score_of(181.0, 0.0), None);
        assert_eq!(score_of(0.0, 85.06), None);
        assert!(score_of(180.0, LAT_MAX).is_some());
    }

    #[test]
    fn interleave_round_trips() {
        for (a, b) in [(0u32, 0u32), (1, 2), (0x3ffffff, 0x1234567), (u32::MAX, 7)] {
            let d = deinterleave64(interleave64(a, b));
            assert_eq!((d as u32, (d >> 32) as u32), (a, b));
        }
    }
}
