package hw

import "strings"

// NIC is an RDMA adapter model, known by its PCI vendor:device ID.
type NIC struct {
	ID        string `json:"id"`   // "15b3:1021", lower-case hex
	Name      string `json:"name"` // ConnectX-7
	PCIeGen   int    `json:"pcie_gen"`
	PCIeWidth int    `json:"pcie_width"` // lanes of one PCIe link of the card
	Source    string `json:"source"`
}

// Sources: names from the PCI ID repository; PCIe generations and widths
// from NVIDIA's adapter documentation.
const (
	srcPCIIDs  = "PCI ID repository, vendor 15b3, https://pci-ids.ucw.cz/read/PC/15b3"
	srcCXDocs  = "NVIDIA ConnectX adapter user manuals and product briefs, https://docs.nvidia.com/networking/"
	srcNICPCIe = srcPCIIDs + "; " + srcCXDocs
)

// nics is the NIC table: Mellanox/NVIDIA ConnectX physical functions.
// Virtual functions (15b3:101a, 101c, 101e...) are left out: their PCIe
// link is what the hypervisor emulates.
var nics = [...]NIC{
	{ID: "15b3:1017", Name: "ConnectX-5", PCIeGen: 3, PCIeWidth: 16, Source: srcNICPCIe},
	{ID: "15b3:1019", Name: "ConnectX-5 Ex", PCIeGen: 4, PCIeWidth: 16, Source: srcNICPCIe},
	{ID: "15b3:101b", Name: "ConnectX-6", PCIeGen: 4, PCIeWidth: 16, Source: srcNICPCIe},
	{ID: "15b3:101d", Name: "ConnectX-6 Dx", PCIeGen: 4, PCIeWidth: 16, Source: srcNICPCIe},
	{ID: "15b3:101f", Name: "ConnectX-6 Lx", PCIeGen: 4, PCIeWidth: 8, Source: srcNICPCIe},
	{ID: "15b3:1021", Name: "ConnectX-7", PCIeGen: 5, PCIeWidth: 16, Source: srcNICPCIe},
	{ID: "15b3:1023", Name: "ConnectX-8", PCIeGen: 6, PCIeWidth: 16, Source: srcNICPCIe},
}

// NICs lists the NIC table.
func NICs() []NIC { return nics[:] }

// NICByID finds a NIC by its "vendor:device" PCI ID ("15b3:1021"; a "0x"
// prefix and upper case are accepted).
func NICByID(id string) (NIC, bool) {
	v, d, ok := strings.Cut(strings.ToLower(strings.TrimSpace(id)), ":")
	if !ok {
		return NIC{}, false
	}
	key := strings.TrimPrefix(v, "0x") + ":" + strings.TrimPrefix(d, "0x")
	for _, n := range nics {
		if n.ID == key {
			return n, true
		}
	}
	return NIC{}, false
}
