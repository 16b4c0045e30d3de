//! Distances on the sphere, and the box of latitudes and longitudes that
//! holds every point within a distance of a centre (what the grid search
//! needs to be sure it misses no neighbour).

/// The Earth's mean radius in metres (IUGG R1 = (2a + b) / 3 of WGS 84).
///
/// The service treats the Earth as a sphere of this radius: at the
/// distances asked about here (hundreds of metres) the spherical error is
/// below 0.5 %, far under the noise of AIS positions.
pub const EARTH_RADIUS_M: f64 = 6_371_008.8;

/// The great-circle distance in metres between two points given in degrees
/// (haversine formula on a sphere of [`EARTH_RADIUS_M`]).
///
/// Chosen over the spherical law of cosines because it stays accurate for
/// the short distances that matter here (metres to kilometres).
pub fn haversine_m(lat1: f64, lon1: f64, lat2: f64, lon2: f64) -> f64 {
    let (p1, p2) = (lat1.to_radians(), lat2.to_radians());
    let dp = p2 - p1;
    let dl = (lon2 - lon1).to_radians();
    let s = (dp / 2.0).sin();
    let t = (dl / 2.0).sin();
    let a = (s * s + p1.cos() * p2.cos() * t * t).clamp(0.0, 1.0);
    2.0 * EARTH_RADIUS_M * a.sqrt().asin()
}

/// How far around a centre the points within a distance can lie, in
/// degrees: the half-height in latitude, and the half-width in longitude
/// (`None` when the circle holds a pole, so that every longitude can be
/// within the distance).
///
/// Both are widened by a small margin so that rounding in
/// [`haversine_m`] can never report "within" for a point outside the box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reach {
    /// Half-height in degrees of latitude.
    pub dlat: f64,
    /// Half-width in degrees of longitude, if bounded.
    pub dlon: Option<f64>,
}

/// Relative and absolute widening of [`Reach`] against rounding.
const MARGIN_REL: f64 = 1e-6;
const MARGIN_ABS_DEG: f64 = 1e-9;

/// The [`Reach`] of `distance_m` metres around latitude `lat` (degrees).
///
/// On a sphere the points within angle δ = d / R of (φ, λ) have latitudes
/// in [φ − δ, φ + δ] and, when the circle holds no pole, longitudes within
/// asin(sin δ / cos φ) of λ: the longitude width of a cell shrinks with
/// cos φ, so the number of cells to search grows towards the poles.
pub fn reach(lat: f64, distance_m: f64) -> Reach {
    let delta = distance_m / EARTH_RADIUS_M;
    let dlat = delta.to_degrees() * (1.0 + MARGIN_REL) + MARGIN_ABS_DEG;
    let phi = lat.to_radians();
    // The circle holds a pole when |φ| + δ reaches π/2; then asin's
    // argument reaches 1 too. Keep well away from that edge.
    let dlon = if delta >= std::f64::consts::FRAC_PI_2 || lat.abs() + dlat >= 90.0 {
        None
    } else {
        let x = delta.sin() / phi.cos();
        if x.is_nan() || x >= 0.999_999 {
            None
        } else {
            Some(x.asin().to_degrees() * (1.0 + MARGIN_REL) + MARGIN_ABS_DEG)
        }
    };
    Reach { dlat, dlon }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_degree_of_latitude_is_about_111_km() {
        let d = haversine_m(48.0, -4.5, 49.0, -4.5);
        assert!((d - 111_195.0).abs() < 5.0, "{d}");
    }

    #[test]
    fn distance_is_symmetric_and_zero_on_itself() {
        assert_eq!(haversine_m(48.38, -4.49, 48.38, -4.49), 0.0);
        let a = haversine_m(48.38, -4.49, 48.39, -4.47);
        let b = haversine_m(48.39, -4.47, 48.38, -4.49);
        assert!((a - b).abs() < 1e-9);
    }

    #[test]
    fn reach_holds_the_points_at_the_distance() {
        for lat in [-70.0, -10.0, 0.0, 48.38, 60.0, 80.0] {
            let r = reach(lat, 500.0);
            let dlon = r.dlon.unwrap_or(180.0);
            // The east point at the distance is inside the box.
            let east = dlon / (1.0 + MARGIN_REL);
            assert!(haversine_m(lat, 0.0, lat, east) >= 499.0, "lat {lat}");
            assert!(haversine_m(lat, 0.0, lat + r.dlat, 0.0) > 500.0);
        }
        assert_eq!(reach(89.999, 500.0).dlon, None);
    }
}
