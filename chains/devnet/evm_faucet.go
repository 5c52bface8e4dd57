//go:build !nodevnet

package devnet

// What the faucet account does on a devnet chain: deploy Veil's contracts
// at genesis and fund addresses.

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/params"

	"github.com/veilhq/veil/chains"
	"github.com/veilhq/veil/chains/evm"
	"github.com/veilhq/veil/chains/evm/bindings"
)

// contract deployments, in nonce order of the faucet key.
type deployment struct {
	name string
	bin  func(faucet common.Address) ([]byte, error)
}

func (n *EVMNet) deployments() []deployment {
	ds := []deployment{
		{"VeilFaucet", func(common.Address) ([]byte, error) { return common.FromHex(bindings.VeilFaucetMetaData.Bin), nil }},
		{"StealthSender", func(common.Address) ([]byte, error) {
			return append(common.FromHex(bindings.StealthSenderMetaData.Bin), bindings.NewStealthSender().PackConstructor(evm.CanonicalAnnouncer)...), nil
		}},
		{"VeilNames", func(common.Address) ([]byte, error) { return common.FromHex(bindings.VeilNamesMetaData.Bin), nil }},
		{"USDC", func(f common.Address) ([]byte, error) {
			return append(common.FromHex(bindings.TestTokenMetaData.Bin), bindings.NewTestToken().PackConstructor("USD Coin (Veil devnet)", "USDC", 6, f)...), nil
		}},
	}
	if n.id != chains.Horizen {
		ds = append(ds, deployment{"ZEN", func(f common.Address) ([]byte, error) {
			return append(common.FromHex(bindings.TestTokenMetaData.Bin), bindings.NewTestToken().PackConstructor("Horizen (Veil devnet)", "ZEN", 18, f)...), nil
		}})
	}
	return ds
}

// deploy creates the contracts of a fresh chain, or checks a persisted
// chain has them. The faucet key deploys at nonces 0.., so addresses are the
// same on every run of a chain.
func (n *EVMNet) deploy(ctx context.Context) error {
	from := crypto.PubkeyToAddress(FaucetKey.PublicKey)
	n.deploys = map[string]common.Address{}
	faucet := crypto.CreateAddress(from, 0)
	for i, d := range n.deployments() {
		addr := crypto.CreateAddress(from, uint64(i))
		n.deploys[d.name] = addr
		code, err := n.client.CodeAt(ctx, addr, nil)
		if err != nil {
			return err
		}
		if len(code) > 0 {
			continue
		}
		nonce, err := n.client.PendingNonceAt(ctx, from)
		if err != nil {
			return err
		}
		if nonce != uint64(i) {
			return fmt.Errorf("%s missing at %s but the deployer's nonce is %d: the devnet database is not Veil's; delete it", d.name, addr.Hex(), nonce)
		}
		bin, err := d.bin(faucet)
		if err != nil {
			return err
		}
		if _, err := n.sendFromFaucet(ctx, nil, nil, bin, 5_000_000, true); err != nil {
			return fmt.Errorf("deploy %s: %w", d.name, err)
		}
	}
	n.faucet = faucet
	n.tokens = []evm.Token{{Symbol: "USDC", Address: n.deploys["USDC"], Decimals: 6}}
	if a, ok := n.deploys["ZEN"]; ok {
		n.tokens = append(n.tokens, evm.Token{Symbol: "ZEN", Address: a, Decimals: 18})
	}
	return nil
}

// sendFromFaucet signs with the faucet key at its pool nonce, submits and
// waits for the receipt (a reverted transaction is an error).
func (n *EVMNet) sendFromFaucet(ctx context.Context, to *common.Address, value *big.Int, data []byte, gas uint64, wait bool) (common.Hash, error) {
	from := crypto.PubkeyToAddress(FaucetKey.PublicKey)
	if gas == 0 {
		g, err := n.client.EstimateGas(ctx, ethereum.CallMsg{From: from, To: to, Value: value, Data: data})
		if err != nil {
			return common.Hash{}, err
		}
		gas = g + g/4
	}
	n.faucetMu.Lock()
	nonce := max(n.faucetNonce, n.eth.TxPool().Nonce(from))
	head := n.eth.BlockChain().CurrentBlock()
	tip := big.NewInt(params.GWei)
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	if value == nil {
		value = new(big.Int)
	}
	tx, err := types.SignNewTx(FaucetKey, types.LatestSignerForChainID(n.eth.BlockChain().Config().ChainID), &types.DynamicFeeTx{
		ChainID: n.eth.BlockChain().Config().ChainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap,
		Gas: gas, To: to, Value: value, Data: data,
	})
	if err == nil {
		err = n.eth.APIBackend.SendTx(ctx, tx)
	}
	if err == nil {
		n.faucetNonce = nonce + 1
	}
	n.faucetMu.Unlock()
	if err != nil {
		return common.Hash{}, err
	}
	if !wait {
		return tx.Hash(), nil
	}
	r, err := n.waitReceipt(ctx, tx.Hash())
	if err != nil {
		return tx.Hash(), err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return tx.Hash(), fmt.Errorf("transaction %s reverted", tx.Hash().Hex())
	}
	return tx.Hash(), nil
}

func (n *EVMNet) waitReceipt(ctx context.Context, h common.Hash) (*types.Receipt, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		// Under the seal lock, like every JSON-RPC request: a receipt is
		// seen only once its block is durable and the pool caught up.
		n.sealMu.RLock()
		r, err := n.client.TransactionReceipt(ctx, h)
		n.sealMu.RUnlock()
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ethereum.NotFound) && !strings.Contains(err.Error(), "indexing") {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no receipt for %s: %w", h.Hex(), ctx.Err())
		case <-n.quit:
			return nil, errors.New("devnet stopped")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Fund drips the faucet amounts to `to` in one transaction and waits for it.
func (n *EVMNet) Fund(ctx context.Context, to common.Address) (common.Hash, error) {
	return n.fund(ctx, to, true)
}

func (n *EVMNet) fund(ctx context.Context, to common.Address, wait bool) (common.Hash, error) {
	native, _ := chains.ParseAmount(FaucetNative, evm.NativeDecimals)
	var tokens []common.Address
	var amounts []*big.Int
	for _, t := range n.tokens {
		amt := FaucetUSDC
		if t.Symbol == "ZEN" {
			amt = FaucetZEN
		}
		v, _ := chains.ParseAmount(amt, t.Decimals)
		tokens, amounts = append(tokens, t.Address), append(amounts, v)
	}
	data := bindings.NewVeilFaucet().PackDrip(to, tokens, amounts)
	return n.sendFromFaucet(ctx, &n.faucet, native, data, 0, wait)
}

// faucetAPI is the "veil" JSON-RPC namespace: veil_fund(address) → tx hash
// (returned once the node accepted it; the caller waits for the receipt).
type faucetAPI struct{ n *EVMNet }

// Fund is veil_fund.
func (f *faucetAPI) Fund(ctx context.Context, to common.Address) (common.Hash, error) {
	return f.n.fund(ctx, to, false)
}
