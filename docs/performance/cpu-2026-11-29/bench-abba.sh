# One zero bench alone, two at once, two at once, one alone, on one core (steady self-play evaluations a second).
cd "$(git rev-parse --show-toplevel)"
B() { zero bench --params campaigns/go-9.yaml --model models/go-9.pt --seconds 15 --json 2>/dev/null | python -c "import json,sys; d=json.load(sys.stdin); print('$1', d['selfplay_steady_evals_per_s'])"; }
B one-alone-1; (B two-a1 & B two-b1 & wait); (B two-a2 & B two-b2 & wait); B one-alone-2
