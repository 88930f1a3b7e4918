// Package plots draws the lab's charts from measured samples with gonum/plot; it is the only
// package of the lab that imports gonum/plot.
//
//  1. A per-scenario builder takes the samples of a run ([metrics.Sample], read with
//     metrics.ReadRun) and returns a *plot.Plot; it chooses no file and writes nothing.
//     [ScenarioCharts] lists the standard ones with their file-name parts: [CachedShare] (with
//     the divergence points marked and labelled by segment, see [DivergenceMinLost]),
//     [CumulativeReread] and [PrefillTime]. With several repetitions a point is their mean and a
//     light band their range.
//  2. [RelativeBars] draws figures relative to spec across scenarios, one [Bar] per arm with
//     its confidence interval, computed by the caller; [RelativeBarsHeight] sizes it.
//  3. [Write] renders a plot as PNG or SVG of a given size to an io.Writer, the legend in a
//     column right of the data (shrunk to fit with 30 arms); the caller opens and closes the file.
//  4. The charts' files are named here: [Names] gives each chart of a report its base name
//     (<scenario>-<chart>, "setup-<label>-" first for one setup of several, safe as a file
//     name, each once) and [File] its path in [Dir] for each of [FileFormats]
//     (results/run_id=<run-id>/plots/midnight-cached-share.svg, say): SVG always, PNG only
//     when asked for.
//
// A chart whose x axis spans more than [ThinAbove] requests (a generated run, or a lab proxy
// capture of a long agent conversation) is drawn thinned: the axis cut into [ThinColumns]
// columns, each keeping its first and last points, its
// extremes and every divergence, glyphs in [ThinGlyphColumns], lines and bands in short pieces,
// so that its PNG draws in a fraction of a second; smaller charts are drawn point for point.
//
// Arms are ordered as metrics.SortArms orders them (spec first, drawn on top) and keep the same
// colour and point shape in every chart of a scenario. Builders are deterministic: the same
// samples give the same SVG, byte for byte, which the package's golden tests rely on.
package plots
