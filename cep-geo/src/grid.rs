//! The grid of the index: square cells in degrees whose side is the
//! distance threshold's angle (the paper's stLD blocking), and the cells a
//! query must look at.

use crate::geo::{EARTH_RADIUS_M, Reach};

/// Above this many cells, a query scans the time window instead of the
/// cells (near the poles, where a cell's width in metres vanishes).
const MAX_CELLS_PER_QUERY: i64 = 4096;

/// A cell: row (from latitude) and column (from longitude).
pub(crate) type CellKey = (i64, i64);

/// Cell arithmetic for one distance.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Grid {
    /// Cell side in degrees (both ways): the distance's angle.
    side: f64,
    /// Columns around the globe; the last one may be narrower.
    cols: i64,
}

/// The cells to search around a point, or "scan everything in the window".
#[derive(Debug)]
pub(crate) enum Around {
    /// Rows `rows.0..=rows.1`, each over the column ranges listed.
    Cells { rows: (i64, i64), cols: [(i64, i64); 2], ncols: usize },
    /// The circle holds a pole or covers too many cells.
    Everything,
}

impl Grid {
    /// The grid for `distance_m` (positive and finite, checked by the caller).
    pub(crate) fn new(distance_m: f64) -> Grid {
        let side = (distance_m / EARTH_RADIUS_M).to_degrees().min(360.0);
        // `side` > 0 and ≤ 360, so the count is in 1..=a few 10^11 for any
        // distance above a micrometre; `as` saturates beyond.
        let cols = ((360.0 / side).ceil() as i64).max(1);
        Grid { side, cols }
    }

    fn row(&self, lat: f64) -> i64 {
        ((lat + 90.0) / self.side).floor() as i64
    }

    fn col(&self, lon: f64) -> i64 {
        (((lon + 180.0) / self.side).floor() as i64).clamp(0, self.cols - 1)
    }

    /// The cell of a point. Monotone in both coordinates, as [`Grid::around`]
    /// relies on.
    pub(crate) fn cell(&self, lat: f64, lon: f64) -> CellKey {
        (self.row(lat), self.col(lon))
    }

    /// The cells that hold every point within the distance of (lat, lon).
    ///
    /// The box of the [`Reach`] is mapped through the same monotone cell
    /// functions as the points, so a point inside the box is in a listed
    /// cell. A box that crosses the antimeridian is split in two.
    pub(crate) fn around(&self, lat: f64, lon: f64, r: Reach) -> Around {
        let Some(dlon) = r.dlon.filter(|d| *d < 180.0) else {
            return Around::Everything;
        };
        let rows = (self.row(lat - r.dlat), self.row(lat + r.dlat));
        let (lo, hi) = (lon - dlon, lon + dlon);
        let span = |a: f64, b: f64| (self.col(a), self.col(b));
        let (cols, ncols) = if lo < -180.0 {
            ([span(lo + 360.0, 180.0), span(-180.0, hi)], 2)
        } else if hi > 180.0 {
            ([span(lo, 180.0), span(-180.0, hi - 360.0)], 2)
        } else {
            ([span(lo, hi), (0, -1)], 1)
        };
        // Saturating: with a tiny distance the indices saturate at the
        // ends of i64, and the count must still say "too many".
        let width =
            cols.iter().take(ncols).fold(0i64, |n, (a, b)| n.saturating_add(b.saturating_sub(*a)).saturating_add(1));
        let height = rows.1.saturating_sub(rows.0).saturating_add(1);
        if height.saturating_mul(width) > MAX_CELLS_PER_QUERY {
            return Around::Everything;
        }
        Around::Cells { rows, cols, ncols }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geo::reach;

    #[test]
    fn brest_searches_a_few_cells() {
        let g = Grid::new(500.0);
        let Around::Cells { rows, cols, ncols } = g.around(48.38, -4.49, reach(48.38, 500.0)) else {
            panic!("everything")
        };
        assert_eq!(ncols, 1);
        assert!(rows.1 - rows.0 <= 2);
        // cos(48.38°) ≈ 0.66: the box is about 1.5 cells wide each side.
        assert!(cols[0].1 - cols[0].0 <= 4, "{cols:?}");
    }

    #[test]
    fn tiny_and_huge_distances_do_not_overflow() {
        for d in [1e-300, 1e-9, 1e7, 1e300] {
            let g = Grid::new(d);
            for (lat, lon) in [(-90.0, -180.0), (0.0, 0.0), (90.0, 180.0), (48.38, -4.49)] {
                let _ = g.cell(lat, lon);
                let _ = g.around(lat, lon, reach(lat, d));
            }
        }
    }

    #[test]
    fn antimeridian_splits_and_poles_scan() {
        let g = Grid::new(500.0);
        let Around::Cells { cols, ncols, .. } = g.around(10.0, 179.999, reach(10.0, 500.0)) else {
            panic!("everything")
        };
        assert_eq!(ncols, 2);
        assert_eq!(cols[1].0, 0);
        assert_eq!(cols[0].1, g.cols - 1);
        assert!(matches!(g.around(89.999_9, 0.0, reach(89.999_9, 500.0)), Around::Everything));
    }
}
