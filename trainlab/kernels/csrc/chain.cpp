// The C++ (CPU) version of trainlab/kernels/chain.py, built by trainlab/kernels/cpp.py.
template <typename T> static inline T gelu(T u) { return T(0.5) * u * (T(1) + verf(u * T(M_SQRT1_2))); }

// Hot loops as plain functions of restrict pointers: GCC vectorises them (not so inside lambdas).
template <typename T>
static void chain_forward_rows(const T* __restrict__ x, const T* __restrict__ b, const T* __restrict__ s,
                               const T* __restrict__ t, T* __restrict__ y, int64_t rows, int64_t C) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) y[r * C + c] = gelu((x[r * C + c] + b[c]) * s[c] + t[c]);
}

template <typename T>
static void chain_backward_rows(const T* __restrict__ g, const T* __restrict__ x, const T* __restrict__ b,
                                const T* __restrict__ s, const T* __restrict__ t, T* __restrict__ dx,
                                T* __restrict__ sums, int64_t rows, int64_t C) {  // sums: 3 x C, this thread's
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < C; ++c) {
      const T z = x[r * C + c] + b[c], u = z * s[c] + t[c];
      const T d = T(0.5) * (T(1) + verf(u * T(M_SQRT1_2))) + u * T(0.3989422804014327) * vexp(T(-0.5) * u * u);
      const T gu = g[r * C + c] * d;
      dx[r * C + c] = gu * s[c];
      sums[c] += gu * s[c];
      sums[C + c] += gu * z;
      sums[2 * C + c] += gu;
    }
}

at::Tensor chain_forward(at::Tensor x, at::Tensor b, at::Tensor s, at::Tensor t) {
  TORCH_CHECK(x.dim() == 2 && b.numel() == x.size(1), "chain_forward: x must be (rows, C), parameters (C,)");
  x = x.contiguous();
  auto y = at::empty_like(x);
  const int64_t M = x.size(0), C = x.size(1);
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "chain_forward", [&] {
    const scalar_t *xp = x.data_ptr<scalar_t>(), *bp = b.data_ptr<scalar_t>(), *sp = s.data_ptr<scalar_t>(),
                   *tp = t.data_ptr<scalar_t>();
    scalar_t* yp = y.data_ptr<scalar_t>();
    at::parallel_for(0, M, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
      chain_forward_rows(xp + r0 * C, bp, sp, tp, yp + r0 * C, r1 - r0, C);
    });
  });
  return y;
}

std::vector<at::Tensor> chain_backward(at::Tensor g, at::Tensor x, at::Tensor b, at::Tensor s,
                                          at::Tensor t) {
  x = x.contiguous();
  g = g.contiguous();
  auto dx = at::empty_like(x);
  const int64_t M = x.size(0), C = x.size(1);
  // Per-thread channel sums, then one small sum over threads. (float sums over many rows
  // round more than the float64 reference allows: accumulate per block of rows instead.)
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1));
  const int64_t blocks = (M + grain - 1) / grain;
  auto partial = at::zeros({blocks, 3, C}, x.options());
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "chain_backward", [&] {
    const scalar_t *xp = x.data_ptr<scalar_t>(), *gp = g.data_ptr<scalar_t>(), *bp = b.data_ptr<scalar_t>(),
                   *sp = s.data_ptr<scalar_t>(), *tp = t.data_ptr<scalar_t>();
    scalar_t *dxp = dx.data_ptr<scalar_t>(), *pp = partial.data_ptr<scalar_t>();
    at::parallel_for(0, blocks, 1, [&](int64_t k0, int64_t k1) {
      for (int64_t k = k0; k < k1; ++k) {
        const int64_t r0 = k * grain, rows = std::min(grain, M - r0);
        chain_backward_rows(gp + r0 * C, xp + r0 * C, bp, sp, tp, dxp + r0 * C, pp + k * 3 * C, rows, C);
      }
    });
  });
  auto total = partial.sum(0);
  return {dx, total[0], total[1], total[2]};
}

TORCH_LIBRARY_FRAGMENT(TORCH_EXTENSION_NAME, m) {
  m.def("chain_forward", &chain_forward);
  m.def("chain_backward", &chain_backward);
}
