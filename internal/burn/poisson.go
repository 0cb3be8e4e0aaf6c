package burn

import "math"

// Error events on a link are taken as a Poisson process: k events seen over
// n bits estimate a rate of k/n per bit, and the exact (Garwood) one-sided
// confidence bounds on the Poisson mean give bounds on that rate. With no
// event the upper bound at 95% is -ln(0.05) ≈ 3.0 events, the "rule of
// three": n bits without an error show a rate below 3/n.

// exactMax is the largest count solved exactly; above it the bounds come
// from the Wilson–Hilferty approximation of the chi-square quantiles they
// equal (relative error far below 1e-4 there), so that a huge count (a
// corrupt capture) costs no more than a small one.
const exactMax = 100000

// PoissonUpper is the one-sided upper confidence bound, at confidence conf
// (0.95), on the mean of a Poisson count of which k were seen: the λ at which
// seeing k or fewer has probability 1-conf (half the chi-square quantile
// at conf with 2k+2 degrees of freedom).
func PoissonUpper(k uint64, conf float64) float64 {
	if k > exactMax {
		return chi2Quantile(conf, 2*float64(k)+2) / 2
	}
	return solveMean(k, 1-conf)
}

// PoissonLower is the one-sided lower confidence bound: the λ at which seeing
// k or more has probability 1-conf (0 when k is 0; half the chi-square
// quantile at 1-conf with 2k degrees of freedom).
func PoissonLower(k uint64, conf float64) float64 {
	if k == 0 {
		return 0
	}
	if k > exactMax {
		return chi2Quantile(1-conf, 2*float64(k)) / 2
	}
	return solveMean(k-1, conf)
}

// chi2Quantile is the Wilson–Hilferty approximation of the p quantile of the
// chi-square distribution with nu degrees of freedom.
func chi2Quantile(p, nu float64) float64 {
	c := 2 / (9 * nu)
	x := 1 - c + normalQuantile(p)*math.Sqrt(c)
	return nu * x * x * x
}

// normalQuantile is the p quantile of the standard normal distribution, by
// bisection on its distribution function.
func normalQuantile(p float64) float64 {
	lo, hi := -40.0, 40.0
	for range 200 {
		mid := (lo + hi) / 2
		if 0.5*math.Erfc(-mid/math.Sqrt2) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// solveMean finds the λ at which P(X ≤ k; λ) = p, by bisection (that
// probability falls as λ grows).
func solveMean(k uint64, p float64) float64 {
	kf := float64(k)
	lo, hi := 0.0, kf+10*math.Sqrt(kf+1)+10
	for poissonCDF(k, hi) > p {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if poissonCDF(k, mid) > p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo <= 1e-12*hi {
			break
		}
	}
	return (lo + hi) / 2
}

// poissonCDF is P(X ≤ k) for X Poisson with mean λ: the regularized upper
// incomplete gamma function Q(k+1, λ).
func poissonCDF(k uint64, lambda float64) float64 {
	if lambda <= 0 {
		return 1
	}
	return 1 - regGammaP(float64(k)+1, lambda)
}

// regGammaP is the regularized lower incomplete gamma function P(a, x):
// its power series below a+1, else 1 minus the continued fraction of Q
// (evaluated with the modified Lentz method).
func regGammaP(a, x float64) float64 {
	if x <= 0 {
		return 0
	}
	lg, _ := math.Lgamma(a)
	front := math.Exp(a*math.Log(x) - x - lg)
	// Enough terms for either form to converge: about sqrt(a) past the
	// peak, and never fewer than a few hundred.
	maxIter := 500 + int(20*math.Sqrt(a))
	if x < a+1 {
		sum, term := 1/a, 1/a
		for n := 1; n < maxIter; n++ {
			term *= x / (a + float64(n))
			sum += term
			if math.Abs(term) < math.Abs(sum)*1e-16 {
				break
			}
		}
		return math.Min(1, sum*front)
	}
	const tiny = 1e-300
	b := x + 1 - a
	c := 1 / tiny
	d := 1 / b
	h := d
	for n := 1; n < maxIter; n++ {
		an := -float64(n) * (float64(n) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-16 {
			break
		}
	}
	return math.Max(0, 1-front*h)
}
