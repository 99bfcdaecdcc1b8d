package hetreward_test

import (
	"context"
	"fmt"
	"log"
	"math"

	hetreward "github.com/hetreward/hetreward/bindings/go"
)

// Fit a reward model to 500 simulated comparisons from annotators of two kinds, then pick
// the best of three candidate answers by pessimistic Best-of-N.
func Example() {
	const n, d1, d2 = 500, 3, 1
	theta := []float64{1, -1, 0.5}
	z := make([]float64, 0, n*d1)
	psi0 := make([]float64, 0, n)
	psi := make([]float64, 0, n*d2)
	y := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		t := 0.0
		for j := 0; j < d1; j++ {
			v := math.Sin(1.7 * float64(i) * float64(j+1)) // deterministic "features" in [-1, 1]
			z = append(z, v)
			t += theta[j] * v
		}
		expert := float64(i % 2)          // covariate: 1 for experts
		sigma := 1 + 1.5*expert           // experts are more rational
		p := 1 / (1 + math.Exp(-sigma*t)) // P(annotator prefers a1)
		label := 0.0
		if math.Mod(float64(i)*0.618034, 1) < p {
			label = 1
		}
		psi0, psi, y = append(psi0, 1), append(psi, expert), append(y, label)
	}

	data, err := hetreward.NewDataset(d1, d2, z, psi0, psi, y, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer data.Close()
	fitter, err := hetreward.NewFitter(hetreward.DefaultFitParams())
	if err != nil {
		log.Fatal(err)
	}
	defer fitter.Close()
	model, err := fitter.Fit(context.Background(), data)
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()

	candidates := []float32{ // three answers, one embedding (d1 floats) per row
		1.0, -1.0, 0.5,
		0.2, 0.1, 0.0,
		-1.0, 1.0, 0.0,
	}
	best, figures, err := model.Select(candidates, nil, 0.05, hetreward.PBoN)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("best answer: %d (its reward's 95%% lower bound is positive: %v)\n",
		best, figures[best].Lower > 0)
	// Output: best answer: 0 (its reward's 95% lower bound is positive: true)
}
