"""``ember.cuda`` without a usable cuda backend: queries say no, seeding and cache calls that
PyTorch scripts make unconditionally are no-ops, the rest explains what to install."""
import os
import subprocess
import sys
import textwrap


def test_cuda_facade_without_backend():
    code = textwrap.dedent("""
        import ember
        assert not ember.cuda.is_available() and ember.cuda.device_count() == 0
        assert not ember.cuda.is_initialized()
        for f in (ember.cuda.manual_seed, ember.cuda.manual_seed_all):
            assert f(0) is None
        ember.cuda.seed(); ember.cuda.seed_all(); ember.cuda.empty_cache()
        try:
            ember.cuda.synchronize()
        except AttributeError as e:
            assert "pip install -e 'backends/cuda_cupy[cuda12]'" in str(e), e  # from this checkout
        else:
            raise AssertionError("synchronize without a backend must fail")
        try:
            ember.ones(1).cuda()
        except RuntimeError as e:
            assert "no installed ember backend provides device type 'cuda'" in str(e)
            assert "pip install -e 'backends/cuda_cupy[cuda12]'" in str(e)
        else:
            raise AssertionError(".cuda() without a backend must fail")
        print("ok")
    """)
    env = {**os.environ, "EMBER_DISABLE_PLUGINS": "cuda_cupy"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
