// The parts of OpenReg written against the full ATen API, kept in one
// translation unit because <ATen/ATen.h> is by far the most expensive header:
//  * autocast (AMP) policies: which operators run in lower precision and
//    which are forced to float32 under `torch.autocast("openreg")`;
//  * scaled dot product attention through the "overrideable" SDPA backend,
//    the slot PyTorch reserves for out-of-tree devices' fused attention;
//  * the fused LSTM and GRU cells nn.LSTM and nn.GRU use on accelerators.
#include <ATen/ATen.h>
#include <ATen/SDPBackend.h>
#include <ATen/autocast_mode.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <torch/library.h>

#include <cmath>
#include <optional>
#include <tuple>

namespace {

// Core PyTorch registers no fallback for AutocastPrivateUse1: without this,
// every op not listed below would fail under autocast instead of running
// unchanged.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  // Matrix products: run in the autocast dtype (float16 / bfloat16).
  KERNEL_PRIVATEUSEONE(mm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(addmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(bmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(baddbmm, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(matmul, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(linear, lower_precision_fp)
  KERNEL_PRIVATEUSEONE(conv2d, lower_precision_fp)
  // Numerically sensitive reductions and losses: always float32.
  KERNEL_PRIVATEUSEONE(softmax, int, fp32)
  KERNEL_PRIVATEUSEONE(log_softmax, int, fp32)
  KERNEL_PRIVATEUSEONE(mse_loss, fp32)
  KERNEL_PRIVATEUSEONE(sum, fp32)
  KERNEL_PRIVATEUSEONE(dot, fp32)
  // Mixed-dtype inputs: promote to the widest type.
  KERNEL_PRIVATEUSEONE(cat, promote)
  KERNEL_PRIVATEUSEONE(stack, promote)
}

// ------------------------------------------------------------------ SDPA
//
// A fused-attention kernel as a vendor would provide one: forward returns
// the output and the row-wise logsumexp of the scaled logits, backward
// recomputes the probabilities from them (no L x S matrix is saved). Here
// both are composed of ATen ops that run on openreg tensors.

using at::Tensor;

// Dropout and grouped-query attention are not implemented by this kernel:
// for those, _fused_sdp_choice sends SDPA to its math path instead.
int64_t fused_sdp_choice(
    const Tensor& query, const Tensor& key, const Tensor& value,
    const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
    std::optional<double> scale, bool enable_gqa) {
  const bool supported = dropout_p == 0.0 && !enable_gqa && query.dim() == 4 &&
      key.size(1) == query.size(1);
  return static_cast<int64_t>(supported ? at::SDPBackend::overrideable : at::SDPBackend::math);
}

// Scaled logits q @ k^T * scale with the causal mask and the bias applied.
Tensor attention_logits(
    const Tensor& q, const Tensor& k, const std::optional<Tensor>& bias,
    bool is_causal, double scale) {
  Tensor logits = at::matmul(q, k.transpose(-2, -1)).mul(scale);
  const auto L = q.size(-2);
  const auto S = k.size(-2);
  if (is_causal) {
    Tensor keep = at::ones({L, S}, q.options().dtype(at::kBool)).tril();
    logits = logits.masked_fill(keep.logical_not(), -std::numeric_limits<double>::infinity());
  }
  if (bias.has_value() && bias->defined()) {
    if (bias->scalar_type() == at::kBool) {
      logits = logits.masked_fill(bias->logical_not(), -std::numeric_limits<double>::infinity());
    } else {
      logits = logits.add(*bias);
    }
  }
  return logits;
}

double softmax_scale(const Tensor& q, std::optional<double> scale) {
  return scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
}

std::tuple<Tensor, Tensor, Tensor, Tensor, c10::SymInt, c10::SymInt, Tensor, Tensor, Tensor>
fused_attention_forward(
    const Tensor& query, const Tensor& key, const Tensor& value,
    const std::optional<Tensor>& attn_bias, double dropout_p, bool is_causal,
    bool return_debug_mask, std::optional<double> scale) {
  TORCH_CHECK(dropout_p == 0.0, "openreg fused attention does not implement dropout (got dropout_p=", dropout_p, ")");
  const Tensor logits = attention_logits(query, key, attn_bias, is_causal, softmax_scale(query, scale));
  const Tensor lse = logits.to(at::kFloat).logsumexp(-1);
  const Tensor probs = logits.to(at::kFloat).sub(lse.unsqueeze(-1)).exp().to(query.scalar_type());
  const Tensor output = at::matmul(probs, value);
  const Tensor empty = at::empty({0}, query.options());
  return {output, lse, empty, empty, c10::SymInt(query.size(-2)), c10::SymInt(key.size(-2)),
          empty, empty, empty};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> fused_attention_backward(
    const Tensor& grad_out, const Tensor& query, const Tensor& key, const Tensor& value,
    const Tensor& attn_bias, std::array<bool, 4> grad_input_mask, const Tensor& out,
    const Tensor& logsumexp, const Tensor& cum_seq_q, const Tensor& cum_seq_k,
    int64_t max_q, int64_t max_k, double dropout_p, bool is_causal,
    const Tensor& philox_seed, const Tensor& philox_offset, std::optional<double> scale) {
  const double s = softmax_scale(query, scale);
  const std::optional<Tensor> bias = attn_bias.defined() ? std::optional<Tensor>(attn_bias) : std::nullopt;
  const Tensor logits = attention_logits(query, key, bias, is_causal, s);
  const Tensor probs = logits.to(at::kFloat).sub(logsumexp.unsqueeze(-1)).exp().to(query.scalar_type());
  // dS = P * (dO V^T - rowsum(dO * O)): the softmax backward.
  const Tensor grad_probs = at::matmul(grad_out, value.transpose(-2, -1));
  const Tensor row = (grad_out * out).sum(-1, /*keepdim=*/true);
  const Tensor grad_logits = probs * (grad_probs - row);
  Tensor grad_q, grad_k, grad_v, grad_bias;
  if (grad_input_mask[0]) {
    grad_q = at::matmul(grad_logits, key).mul(s);
  }
  if (grad_input_mask[1]) {
    grad_k = at::matmul(grad_logits.transpose(-2, -1), query).mul(s);
  }
  if (grad_input_mask[2]) {
    grad_v = at::matmul(probs.transpose(-2, -1), grad_out);
  }
  if (grad_input_mask[3] && attn_bias.defined() && attn_bias.is_floating_point()) {
    grad_bias = grad_logits.sum_to_size(attn_bias.sizes());
  }
  return {grad_q, grad_k, grad_v, grad_bias};
}

// -------------------------------------------------------- LSTM, GRU cells
//
// nn.LSTM and nn.GRU on an accelerator (cuda, xpu, privateuse1) run each
// step through the fused cell kernels, which ATen implements for CUDA only.
// Here they are composed of ATen ops on openreg tensors. The workspace saved
// for backward holds what CUDA's kernels keep there.

// Whether the cell has biases: both or neither, as the CUDA kernels require.
bool has_biases(
    const char* op, const std::optional<Tensor>& input_bias, const std::optional<Tensor>& hidden_bias) {
  const bool has_input_bias = input_bias.has_value() && input_bias->defined();
  const bool has_hidden_bias = hidden_bias.has_value() && hidden_bias->defined();
  TORCH_CHECK(
      has_input_bias == has_hidden_bias,
      op, ": input_bias and hidden_bias must both be given or both be None");
  return has_input_bias;
}

// Workspace: the activated gates [i, f, g, o].
std::tuple<Tensor, Tensor, Tensor> fused_lstm_cell(
    const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx,
    const std::optional<Tensor>& input_bias, const std::optional<Tensor>& hidden_bias) {
  Tensor gates = input_gates + hidden_gates;
  if (has_biases("_thnn_fused_lstm_cell", input_bias, hidden_bias)) {
    gates = gates + *input_bias + *hidden_bias;
  }
  const auto chunks = gates.chunk(4, 1);
  const Tensor i = chunks[0].sigmoid();
  const Tensor f = chunks[1].sigmoid();
  const Tensor g = chunks[2].tanh();
  const Tensor o = chunks[3].sigmoid();
  const Tensor cy = f * cx + i * g;
  const Tensor hy = o * cy.tanh();
  return {hy, cy, at::cat({i, f, g, o}, 1)};
}

// Gradients of the pre-activation gates (one tensor for both the input and
// the hidden gates, which are summed in the forward), of cx and of the bias.
std::tuple<Tensor, Tensor, Tensor> fused_lstm_cell_backward_impl(
    const std::optional<Tensor>& grad_hy, const std::optional<Tensor>& grad_cy,
    const Tensor& cx, const Tensor& cy, const Tensor& workspace, bool has_bias) {
  const bool has_grad_hy = grad_hy.has_value() && grad_hy->defined();
  const bool has_grad_cy = grad_cy.has_value() && grad_cy->defined();
  if (!has_grad_hy && !has_grad_cy) {
    return {Tensor(), Tensor(), Tensor()};
  }
  const auto gates = workspace.chunk(4, 1);
  const Tensor& i = gates[0];
  const Tensor& f = gates[1];
  const Tensor& g = gates[2];
  const Tensor& o = gates[3];
  const Tensor tanh_cy = cy.tanh();
  Tensor grad_c = has_grad_cy ? *grad_cy : at::zeros_like(cy);
  Tensor grad_o = at::zeros_like(o);
  if (has_grad_hy) {
    grad_c = grad_c + *grad_hy * o * (1 - tanh_cy * tanh_cy);
    grad_o = *grad_hy * tanh_cy;
  }
  const Tensor grad_gates = at::cat(
      {grad_c * g * i * (1 - i), grad_c * cx * f * (1 - f), grad_c * i * (1 - g * g),
       grad_o * o * (1 - o)},
      1);
  const Tensor grad_bias = has_bias ? grad_gates.sum(0) : Tensor();
  return {grad_gates, grad_c * f, grad_bias};
}

// Workspace: [r, z, n, hn, hx], the activated reset, update and new gates,
// the hidden part of the new gate (bias included) and the previous state.
std::tuple<Tensor, Tensor> fused_gru_cell(
    const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx,
    const std::optional<Tensor>& input_bias, const std::optional<Tensor>& hidden_bias) {
  Tensor in_gates = input_gates;
  Tensor hid_gates = hidden_gates;
  if (has_biases("_thnn_fused_gru_cell", input_bias, hidden_bias)) {
    in_gates = in_gates + *input_bias;
    hid_gates = hid_gates + *hidden_bias;
  }
  const auto in = in_gates.chunk(3, 1);
  const auto hid = hid_gates.chunk(3, 1);
  const Tensor r = (in[0] + hid[0]).sigmoid();
  const Tensor z = (in[1] + hid[1]).sigmoid();
  const Tensor n = (in[2] + r * hid[2]).tanh();
  const Tensor hy = n + z * (hx - n);
  return {hy, at::cat({r, z, n, hid[2], hx}, 1)};
}

// Gradients of the input gates, the hidden gates, hx and the two biases.
std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> fused_gru_cell_backward(
    const Tensor& grad_hy, const Tensor& workspace, bool has_bias) {
  const auto saved = workspace.chunk(5, 1);
  const Tensor& r = saved[0];
  const Tensor& z = saved[1];
  const Tensor& n = saved[2];
  const Tensor& hn = saved[3];
  const Tensor& hx = saved[4];
  const Tensor grad_n = grad_hy * (1 - z) * (1 - n * n);
  const Tensor grad_r = grad_n * hn * r * (1 - r);
  const Tensor grad_z = grad_hy * (hx - n) * z * (1 - z);
  const Tensor grad_input_gates = at::cat({grad_r, grad_z, grad_n}, 1);
  const Tensor grad_hidden_gates = at::cat({grad_r, grad_z, grad_n * r}, 1);
  const Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : Tensor();
  const Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : Tensor();
  return {grad_input_gates, grad_hidden_gates, grad_hy * z, grad_input_bias, grad_hidden_bias};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(fused_lstm_cell));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(fused_gru_cell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(fused_gru_cell_backward));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(fused_lstm_cell_backward_impl));
  m.impl("_fused_sdp_choice", TORCH_FN(fused_sdp_choice));
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(fused_attention_forward));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward", TORCH_FN(fused_attention_backward));
}

}  // namespace

namespace at::native {
// scaled_dot_product_attention asks this stub (not the operator) which
// backend to use; the operator registration above serves direct calls.
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &fused_sdp_choice)
}  // namespace at::native
