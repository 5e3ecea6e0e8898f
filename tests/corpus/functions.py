"""The corpus: functions written the way NumPy users write them (allocate, then fill),
each re-derived here from its published formula (the source is cited per function). The
only change from plain-NumPy code is the import line below."""

import chainrule.numpy as np

# ----------------------------------------------------------------------------- optimization
# Rosenbrock's function and its derivatives (H. H. Rosenbrock, Comput. J. 3, 1960; the
# gradient and Hessian-vector product as in the SciPy tutorial, "Unconstrained minimization").


def rosen_der(x):
    xm, xm_m1, xm_p1 = x[1:-1], x[:-2], x[2:]
    der = np.zeros_like(x)
    der[1:-1] = 200 * (xm - xm_m1**2) - 400 * (xm_p1 - xm**2) * xm - 2 * (1 - xm)
    der[0] = -400 * x[0] * (x[1] - x[0] ** 2) - 2 * (1 - x[0])
    der[-1] = 200 * (x[-1] - x[-2] ** 2)
    return der


def rosen_hess(x):
    H = np.diag(-400 * x[:-1], 1) - np.diag(400 * x[:-1], -1)
    diagonal = np.zeros_like(x)
    diagonal[0] = 1200 * x[0] ** 2 - 400 * x[1] + 2
    diagonal[-1] = 200
    diagonal[1:-1] = 202 + 1200 * x[1:-1] ** 2 - 400 * x[2:]
    H = H + np.diag(diagonal)
    return H


def rosen_hess_prod(x, p):
    Hp = np.zeros_like(x)
    Hp[0] = (1200 * x[0] ** 2 - 400 * x[1] + 2) * p[0] - 400 * x[0] * p[1]
    Hp[1:-1] = (-400 * x[:-2] * p[:-2] + (202 + 1200 * x[1:-1] ** 2 - 400 * x[2:]) * p[1:-1]
                - 400 * x[1:-1] * p[2:])
    Hp[-1] = -400 * x[-2] * p[-2] + 200 * p[-1]
    return Hp


def rosen_loop(x):
    total = np.zeros(())
    for i in range(len(x) - 1):
        total += 100.0 * (x[i + 1] - x[i] ** 2) ** 2 + (1 - x[i]) ** 2
    return total


# Moré, Garbow, Hillstrom, "Testing unconstrained optimization software", ACM TOMS 7 (1981):
# problem 13 (Powell singular), 21 (extended Rosenbrock), 30 (Broyden tridiagonal),
# 7 (helical valley), 26 (trigonometric).
def powell_singular(x):
    F = np.empty(4)
    F[0] = x[0] + 10 * x[1]
    F[1] = np.sqrt(5) * (x[2] - x[3])
    F[2] = (x[1] - 2 * x[2]) ** 2
    F[3] = np.sqrt(10) * (x[0] - x[3]) ** 2
    return F


def extended_rosenbrock(x):
    r = np.empty(len(x))
    r[0::2] = 10 * (x[1::2] - x[0::2] ** 2)
    r[1::2] = 1 - x[0::2]
    return r


def broyden_tridiagonal(x):
    padded = np.zeros(len(x) + 2)
    padded[1:-1] = x
    return (3 - 2 * x) * x - padded[:-2] - 2 * padded[2:] + 1


def helical_valley(x):
    theta = np.arctan2(x[1], x[0]) / (2 * np.pi)
    f = np.zeros(3)
    f[0] = 10 * (x[2] - 10 * theta)
    f[1] = 10 * (np.sqrt(x[0] ** 2 + x[1] ** 2) - 1)
    f[2] = x[2]
    return f


def trigonometric(x):
    n = len(x)
    r = np.full(n, float(n))
    r -= np.sum(np.cos(x))
    r += np.arange(1, n + 1) * (1 - np.cos(x)) - np.sin(x)
    return r


def beale_gradient(x):
    # Beale (1958); f = sum_i (c_i - x (1 - y^i))^2, c = 1.5, 2.25, 2.625
    g = np.zeros(2)
    for i, c in enumerate((1.5, 2.25, 2.625), start=1):
        r = c - x[0] * (1 - x[1] ** i)
        g[0] += 2 * r * -(1 - x[1] ** i)
        g[1] += 2 * r * x[0] * i * x[1] ** (i - 1)
    return g


# ----------------------------------------------------------------------------- ODE right-hand sides
# Robertson's chemical kinetics (Robertson 1966; Hairer & Wanner, Solving ODEs II, IV.1).
def robertson(t, y, k1=0.04, k2=3e7, k3=1e4):
    dydt = np.zeros_like(y)
    dydt[0] = -k1 * y[0] + k3 * y[1] * y[2]
    dydt[1] = k1 * y[0] - k3 * y[1] * y[2] - k2 * y[1] ** 2
    dydt[2] = k2 * y[1] ** 2
    return dydt


# van der Pol oscillator (van der Pol 1926; Hairer & Wanner II, IV.1).
def van_der_pol(t, y, mu=3.0):
    dydt = np.empty(2)
    dydt[0] = y[1]
    dydt[1] = mu * (1 - y[0] ** 2) * y[1] - y[0]
    return dydt


# Lotka-Volterra predator-prey (the scipy.integrate.solve_ivp documentation's example).
def lotka_volterra(t, z, a=1.5, b=1.0, c=3.0, d=1.0):
    x, y = z
    dz = np.zeros(2)
    dz[0] = a * x - b * x * y
    dz[1] = -c * y + d * x * y
    return dz


# Lorenz (1963).
def lorenz(t, s, sigma=10.0, rho=28.0, beta=8.0 / 3.0):
    ds = np.empty(3)
    ds[0] = sigma * (s[1] - s[0])
    ds[1] = s[0] * (rho - s[2]) - s[1]
    ds[2] = s[0] * s[1] - beta * s[2]
    return ds


# Exponential decay, the first example of scipy.integrate.solve_ivp's docs: y' = -0.5 y.
def exponential_decay(t, y):
    dydt = np.empty_like(y)
    np.multiply(y, -0.5, out=dydt)
    return dydt


# Brusselator with diffusion, method of lines (Hairer & Wanner II, IV.1, (1.6)).
def brusselator(t, y, A=1.0, B=3.0, alpha=0.02):
    n = len(y) // 2
    u, v = y[:n], y[n:]
    dx2 = (1.0 / (n + 1)) ** 2
    dydt = np.zeros(2 * n)
    du, dv = dydt[:n], dydt[n:]
    du[:] = A + u**2 * v - (B + 1) * u
    dv[:] = B * u - u**2 * v
    du[1:-1] += alpha / dx2 * (u[:-2] - 2 * u[1:-1] + u[2:])
    dv[1:-1] += alpha / dx2 * (v[:-2] - 2 * v[1:-1] + v[2:])
    return dydt


# A mass-action reaction network, A + B -> C, C -> A + B, 2A -> D: each reaction's rate
# added into the species it consumes and produces (law of mass action; the stoichiometric
# matrix's rows, one per reaction).
def kinetics_network(t, c, k=(1.0, 0.5, 0.2)):
    stoichiometry = np.array([[-1, -1, 1, 0], [1, 1, -1, 0], [-2, 0, 0, 1]])
    rates = np.empty(3)
    rates[0] = k[0] * c[0] * c[1]
    rates[1] = k[1] * c[2]
    rates[2] = k[2] * c[0] ** 2
    dcdt = np.zeros_like(c)
    for j in range(3):
        species = np.nonzero(stoichiometry[j])[0]
        np.add.at(dcdt, species, stoichiometry[j][species] * rates[j])
    return dcdt


# Oregonator (Field & Noyes 1974; Hairer & Wanner II, IV.1).
def oregonator(t, y, s=77.27, w=0.161, q=8.375e-6):
    dydt = np.empty(3)
    dydt[0] = s * (y[1] - y[0] * y[1] + y[0] - q * y[0] ** 2)
    dydt[1] = (-y[1] - y[0] * y[1] + y[2]) / s
    dydt[2] = w * (y[0] - y[2])
    return dydt


# Simple pendulum, theta'' = -(g / L) sin theta.
def pendulum(t, y, g=9.81, L=1.0):
    dydt = np.zeros_like(y)
    dydt[0] = y[1]
    dydt[1] = -(g / L) * np.sin(y[0])
    return dydt


# SIR epidemic model (Kermack & McKendrick 1927).
def sir(t, y, beta=0.3, gamma=0.1):
    S, I, R = y
    N = S + I + R
    dydt = np.zeros(3)
    dydt[0] = -beta * S * I / N
    dydt[1] = beta * S * I / N - gamma * I
    dydt[2] = gamma * I
    return dydt


# Arenstorf orbit, restricted three-body problem (Hairer, Norsett & Wanner I, II.0).
def arenstorf(t, y, mu=0.012277471):
    mu2 = 1 - mu
    D1 = ((y[0] + mu) ** 2 + y[1] ** 2) ** 1.5
    D2 = ((y[0] - mu2) ** 2 + y[1] ** 2) ** 1.5
    dydt = np.empty(4)
    dydt[0] = y[2]
    dydt[1] = y[3]
    dydt[2] = y[0] + 2 * y[3] - mu2 * (y[0] + mu) / D1 - mu * (y[0] - mu2) / D2
    dydt[3] = y[1] - 2 * y[2] - mu2 * y[1] / D1 - mu * y[1] / D2
    return dydt


# Heat equation u_t = u_xx by the method of lines, Dirichlet ends held.
def heat_mol(t, u, dx=0.1):
    dudt = np.zeros_like(u)
    dudt[1:-1] = (u[:-2] - 2 * u[1:-1] + u[2:]) / dx**2
    return dudt


# ----------------------------------------------------------------------------- PDE residuals
# Bratu's problem u'' + lam exp(u) = 0, u(0) = u(1) = 0, central differences.
def bratu_residual(u, lam=1.0):
    h = 1.0 / (len(u) - 1)
    r = np.empty(len(u))
    r[0] = u[0]
    r[-1] = u[-1]
    r[1:-1] = u[:-2] - 2 * u[1:-1] + u[2:] + h**2 * lam * np.exp(u[1:-1])
    return r


# Poisson -u'' = 1 on (0, 1), computed with out= into a view of the residual.
def poisson1d_residual(u):
    h = 1.0 / (len(u) - 1)
    r = np.empty_like(u)
    np.subtract(2 * u[1:-1], u[:-2] + u[2:], out=r[1:-1])
    r[1:-1] /= h**2
    r[1:-1] -= 1.0
    r[0] = u[0]
    r[-1] = u[-1]
    return r


# Poisson -lap u = 1 on the unit square, five-point stencil, boundary rows and columns.
def poisson2d_residual(u):
    n = int(round(len(u) ** 0.5))
    h = 1.0 / (n - 1)
    U = u.reshape(n, n)
    R = np.zeros_like(U)
    R[1:-1, 1:-1] = (4 * U[1:-1, 1:-1] - U[:-2, 1:-1] - U[2:, 1:-1] - U[1:-1, :-2]
                     - U[1:-1, 2:]) / h**2 - 1.0
    R[0, :] = U[0, :]
    R[-1, :] = U[-1, :]
    R[:, 0] = U[:, 0]
    R[:, -1] = U[:, -1]
    return R.ravel()


# Bratu in two dimensions (same stencil as above, lam exp(u) source).
def bratu2d_residual(u, lam=2.0):
    n = int(round(len(u) ** 0.5))
    h = 1.0 / (n - 1)
    U = np.zeros((n, n))
    U[:, :] = u.reshape(n, n)
    R = U.copy()
    R[1:-1, 1:-1] = (U[:-2, 1:-1] + U[2:, 1:-1] + U[1:-1, :-2] + U[1:-1, 2:]
                     - 4 * U[1:-1, 1:-1]) + h**2 * lam * np.exp(U[1:-1, 1:-1])
    return R.ravel()


# One explicit (FTCS) step of the heat equation, then a few more in a loop.
def heat_ftcs(u, r=0.25, steps=3):
    for _ in range(steps):
        unew = u.copy()
        unew[1:-1] = u[1:-1] + r * (u[2:] - 2 * u[1:-1] + u[:-2])
        u = unew
    return u


# Viscous Burgers u_t + u u_x = nu u_xx, residual of one backward-Euler step from u_old.
def burgers_residual(u, nu=0.1, dt=0.01):
    n = len(u)
    dx = 1.0 / (n - 1)
    u_old = np.linspace(0, 1, n) * (1 - np.linspace(0, 1, n))
    res = np.zeros(n)
    res[1:-1] = ((u[1:-1] - u_old[1:-1]) / dt + u[1:-1] * (u[2:] - u[:-2]) / (2 * dx)
                 - nu * (u[2:] - 2 * u[1:-1] + u[:-2]) / dx**2)
    res[0] = u[0]
    res[-1] = u[-1]
    return res


# First-order upwind advection, in place on a copy, time stepped.
def upwind_advection(u0, c=0.5, steps=3):
    u = u0.copy()
    for _ in range(steps):
        u[1:] -= c * (u[1:] - u[:-1])
    return u


# ----------------------------------------------------------------------------- physics, statistics
# Newtonian n-body accelerations, pairwise loop into a preallocated array (G = 1).
def nbody_accelerations(flat_positions, masses=(1.0, 2.0, 0.5), eps=0.1):
    pos = flat_positions.reshape(-1, 2)
    acc = np.zeros_like(pos)
    for i in range(len(pos)):
        for j in range(len(pos)):
            if i != j:
                d = pos[j] - pos[i]
                acc[i] += masses[j] * d / (np.sum(d**2) + eps**2) ** 1.5
    return acc.ravel()


# Gaussian log-likelihood, one term per observation into a buffer.
def gaussian_loglik(theta, data=(0.3, -1.2, 2.0, 0.7)):
    mu, log_sigma = theta[0], theta[1]
    sigma = np.exp(log_sigma)
    ll = np.zeros(len(data))
    for i, y in enumerate(data):
        ll[i] = -0.5 * ((y - mu) / sigma) ** 2 - log_sigma - 0.5 * np.log(2 * np.pi)
    return ll.sum()


# A weighted histogram with add.at (as numpy.histogram(weights=...), bins fixed).
def weighted_histogram(w, positions=(0.1, 0.5, 0.55, 0.9, 0.15, 0.52), nbins=4):
    bins = (np.array(positions) * nbins).astype(int)
    counts = np.zeros(nbins)
    np.add.at(counts, bins, w**2)
    return counts


# One Kalman filter predict-update step, constant-velocity model, preallocated matrices
# (Kalman 1960; the standard predict/update equations).
def kalman_step(state, z=0.7, dt=0.1, q=0.01, r=0.2):
    F = np.eye(2)
    F[0, 1] = dt
    P0 = np.eye(2)
    P0[0, 0] = state[2] ** 2
    P0[1, 1] = state[3] ** 2
    x = np.empty(2)
    x[:] = state[:2]
    x_pred = F @ x
    P = np.zeros((2, 2))
    P[:] = F @ P0 @ F.T + q * np.eye(2)
    S = P[0, 0] + r
    K = np.empty(2)
    K[0] = P[0, 0] / S
    K[1] = P[1, 0] / S
    out = np.empty(4)
    out[:2] = x_pred + K * (z - x_pred[0])
    out[2:] = np.diag(P - np.outer(K, P[0]))
    return out


# A chain of springs: extensions by out=, forces accumulated through views.
def spring_chain_forces(x, k=2.0, rest=1.0):
    ext = np.empty(len(x) - 1)
    np.subtract(x[1:], x[:-1], out=ext)
    ext -= rest
    f = np.zeros_like(x)
    f[:-1] += k * ext
    f[1:] -= k * ext
    return f


# Second-order central differences inside, one-sided at the ends (as numpy.gradient).
def fd_gradient(f, h=0.5):
    g = np.empty_like(f)
    g[1:-1] = (f[2:] - f[:-2]) / (2 * h)
    g[0] = (f[1] - f[0]) / h
    g[-1] = (f[-1] - f[-2]) / h
    return g


# Softmax with out= and in-place normalisation.
def softmax(z):
    e = np.empty_like(z)
    np.exp(z - z.max(), out=e)
    e /= e.sum()
    return e


# Running sum written element by element.
def running_sum(x):
    c = np.empty_like(x)
    total = 0.0
    for i in range(len(x)):
        total += x[i]
        c[i] = total
    return c


# A tridiagonal matrix assembled by fancy indices, applied to x.
def tridiagonal_apply(x):
    n = len(x)
    A = np.zeros((n, n))
    A[np.arange(n), np.arange(n)] = 2 + x**2
    A[np.arange(n - 1), np.arange(1, n)] = -1.0
    A[np.arange(1, n), np.arange(n - 1)] = -x[1:]
    return A @ x


# AR(1) residuals (Box & Jenkins): stationary first term, then one-step errors.
def ar1_residuals(theta, y=(0.5, -0.2, 0.9, 0.1, -0.4)):
    phi = theta[0]
    y = np.array(y) * theta[1]
    e = np.zeros_like(y)
    e[0] = y[0] * np.sqrt(1 - phi**2)
    e[1:] = y[1:] - phi * y[:-1]
    return e


# A squared-exponential covariance matrix filled by its upper triangle and mirrored
# through the transposed view (Rasmussen & Williams, GPML, (2.16)).
def se_covariance(x, ell=0.7):
    n = len(x)
    C = np.empty((n, n))
    for i in range(n):
        C[i, i:] = np.exp(-0.5 * (x[i] - x[i:]) ** 2 / ell**2)
        C.T[i, i:] = C[i, i:]
    return C


# A state vector seen as a matrix through reshape views.
def reshape_view_fill(x):
    state = np.zeros(6)
    state.reshape(2, 3)[0] = x[:3]
    state.reshape(2, 3)[1] = x[:3] ** 2
    return state


# ReLU-squared with copyto(where=), leaky ReLU with putmask, positions with put.
def copyto_relu2(x):
    out = np.zeros_like(x)
    np.copyto(out, x**2, where=x > 0)
    return out


def putmask_leaky(x):
    y = x.copy()
    np.putmask(y, x < 0, 0.1 * x)
    return y


def put_scatter(x):
    out = np.zeros(2 * len(x))
    np.put(out, np.arange(0, 2 * len(x), 2), np.sin(x))
    return out


# A buffer filled with a traced value everywhere (a.fill), then a row overwritten.
def fill_then_row(x):
    a = np.empty((2, len(x)))
    a.fill(x.sum())
    a[1] = x * 3
    return a.ravel()
