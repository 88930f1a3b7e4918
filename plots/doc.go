// Package plots draws the lab's charts from measured samples with gonum/plot; it is the only
// package of the lab that imports gonum.
//
//  1. A builder such as [CachedShare] takes the samples of a run ([metrics.Sample], read with
//     metrics.ReadRun) and returns a *plot.Plot. It chooses no file and writes nothing.
//  2. [Write] renders a plot as PNG or SVG of a given size to an io.Writer; the caller chooses
//     the path (results/<run-id>/plots/<scenario>-cached-share.svg, say) and closes the file.
//
// Builders are deterministic: the same samples give the same SVG, byte for byte, which the
// package's golden tests rely on.
package plots
