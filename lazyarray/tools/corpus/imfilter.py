"""Image filters: a separable blur by shifted slices, the Sobel gradient, a threshold.

The edge detector of image-processing tutorials written without SciPy: a 5-tap binomial
blur applied along rows then columns as a weighted sum of shifted slices, the Sobel
derivatives from the blurred image, the gradient magnitude, and a binary edge map from a
threshold relative to the strongest edge.
"""

import numpy

SIZES = {
    "test": {"shape": (30, 40)},
    "64K": {"shape": (256, 256)},
    "4M": {"shape": (2048, 2048)},
}


def make(params, seed):
    """A noisy image of bright discs on a gradient background."""
    rng = numpy.random.default_rng(seed)
    h, w = params["shape"]
    yy, xx = numpy.mgrid[0:h, 0:w]
    img = 0.3 * xx / w + 0.1 * rng.standard_normal((h, w))
    for _ in range(8):
        cy, cx, r = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(0.05, 0.2) * min(h, w)
        img[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] += 1.0
    return (img,)


def run(np, img, rel_threshold=0.3):
    """Return the blurred image, the gradient magnitude, the edge map and its pixel count."""
    img = np.asarray(img, dtype=float)
    rows = (img[:, :-4] + 4.0 * img[:, 1:-3] + 6.0 * img[:, 2:-2]
            + 4.0 * img[:, 3:-1] + img[:, 4:]) / 16.0
    blur = (rows[:-4] + 4.0 * rows[1:-3] + 6.0 * rows[2:-2] + 4.0 * rows[3:-1] + rows[4:]) / 16.0
    gx = ((blur[:-2, 2:] + 2.0 * blur[1:-1, 2:] + blur[2:, 2:])
          - (blur[:-2, :-2] + 2.0 * blur[1:-1, :-2] + blur[2:, :-2]))
    gy = ((blur[2:, :-2] + 2.0 * blur[2:, 1:-1] + blur[2:, 2:])
          - (blur[:-2, :-2] + 2.0 * blur[:-2, 1:-1] + blur[:-2, 2:]))
    magnitude = np.sqrt(gx ** 2 + gy ** 2)
    edges = magnitude > rel_threshold * magnitude.max()
    return blur, magnitude, edges, edges.sum()
